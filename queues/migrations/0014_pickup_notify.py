# The NOTIFY triggers that wake idle workers when a job may have become claimable
# (PostgreSQL only; the other vendors' blocks are empty: their workers watch instead).

from django.db import migrations

from queues.store.catalogue import reinstall_operations

install, drop = reinstall_operations("pickup_notify")


class Migration(migrations.Migration):

    dependencies = [
        ("queues", "0013_history_hourly_counts"),
    ]

    operations = [migrations.RunPython(install, drop)]
