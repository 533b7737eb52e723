# The NOTIFY triggers that wake idle workers when a job may have become claimable
# (PostgreSQL only; the other vendors' blocks are empty: their workers watch instead).

from django.db import migrations


def install(apps, schema_editor):
    from queues.sql import run

    run(schema_editor.connection, "drop_pickup_notify")
    run(schema_editor.connection, "install_pickup_notify")


def drop(apps, schema_editor):
    from queues.sql import run

    run(schema_editor.connection, "drop_pickup_notify")


class Migration(migrations.Migration):

    dependencies = [
        ("queues", "0012_queue_config"),
    ]

    operations = [migrations.RunPython(install, drop)]
