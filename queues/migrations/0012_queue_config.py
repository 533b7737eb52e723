# The queue configuration table (queues.engine.limits): a queue's max_running. Its queue_name
# compares exactly on MySQL/MariaDB as every other queue_name column does (see 0008).

from django.db import migrations, models
import django.utils.timezone


def _binary_name(apps, schema_editor):
    if schema_editor.connection.vendor == "mysql":
        schema_editor.execute(
            "ALTER TABLE queues_queueconfig MODIFY queue_name VARCHAR(255) "
            "CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL"
        )


class Migration(migrations.Migration):
    # DDL: MySQL/MariaDB commit it at once, and Django refuses it inside a transaction there.
    atomic = False

    dependencies = [
        ("queues", "0011_tags_job_tags"),
    ]

    operations = [
        migrations.CreateModel(
            name="QueueConfig",
            fields=[
                (
                    "queue_name",
                    models.CharField(max_length=255, primary_key=True, serialize=False),
                ),
                ("max_running", models.PositiveIntegerField(blank=True, null=True)),
                ("updated_at", models.DateTimeField(default=django.utils.timezone.now)),
                ("updated_by", models.CharField(blank=True, max_length=255, null=True)),
            ],
            options={
                "ordering": ["queue_name"],
                "constraints": [
                    models.CheckConstraint(
                        condition=models.Q(
                            ("max_running__isnull", True), ("max_running__gte", 1), _connector="OR"
                        ),
                        name="queueconfig_max_running_positive",
                    )
                ],
            },
        ),
        migrations.RunPython(_binary_name, migrations.RunPython.noop),
    ]
