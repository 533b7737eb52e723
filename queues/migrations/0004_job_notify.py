# The NOTIFY trigger that wakes the live dashboard's aggregator (PostgreSQL only; the
# other vendors' blocks are empty).

from django.db import migrations


def install(apps, schema_editor):
    from queues.store.catalogue import run

    run(schema_editor.connection, "drop_job_notify")
    run(schema_editor.connection, "install_job_notify")


def drop(apps, schema_editor):
    from queues.store.catalogue import run

    run(schema_editor.connection, "drop_job_notify")


class Migration(migrations.Migration):

    dependencies = [
        ("queues", "0003_job_queue_completed"),
    ]

    operations = [migrations.RunPython(install, drop)]
