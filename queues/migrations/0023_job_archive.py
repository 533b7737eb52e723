"""The archive of finished jobs (queues.models.archive). Its queue_name compares exactly on
MySQL/MariaDB as every other queue_name column does (see 0008)."""

from django.db import migrations, models

import queues.enums
import queues.models


def _binary_name(apps, schema_editor):
    if schema_editor.connection.vendor == "mysql":
        schema_editor.execute(
            "ALTER TABLE queues_archivedjob MODIFY queue_name VARCHAR(255) "
            "CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL"
        )


class Migration(migrations.Migration):
    # DDL: MySQL/MariaDB commit it at once, and Django refuses it inside a transaction there.
    atomic = False

    dependencies = [("queues", "0022_job_trace_context")]

    operations = [
        migrations.CreateModel(
            name="ArchivedJob",
            fields=[
                ("id", models.UUIDField(editable=False, primary_key=True, serialize=False)),
                ("queue_name", models.CharField(max_length=255)),
                (
                    "status",
                    models.CharField(choices=queues.enums.JobStatus.choices, max_length=16),
                ),
                (
                    "priority",
                    models.SmallIntegerField(
                        choices=queues.enums.PRIORITY_CHOICES,
                        default=queues.enums.JobPriority["NORMAL"],
                    ),
                ),
                ("attempts", models.PositiveIntegerField(default=0)),
                ("created_at", models.DateTimeField()),
                ("finished_at", models.DateTimeField()),
                ("archived_at", models.DateTimeField()),
                ("batch_id", models.UUIDField(blank=True, null=True)),
                ("workflow_id", models.UUIDField(blank=True, null=True)),
                ("unique_key", models.CharField(blank=True, max_length=255, null=True)),
                ("tags", models.JSONField(blank=True, default=list)),
                ("failures", models.PositiveIntegerField(default=0)),
                ("data", models.BinaryField()),
            ],
            options={
                "indexes": [
                    models.Index(
                        fields=["queue_name", "status", "finished_at"], name="archived_queue"
                    ),
                    models.Index(fields=["finished_at"], name="archived_finished"),
                    models.Index(fields=["created_at", "id"], name="archived_created"),
                    models.Index(fields=["archived_at"], name="archived_at"),
                    queues.models.PortableIndex(
                        condition=models.Q(("batch_id__isnull", False)),
                        fields=["batch_id"],
                        name="archived_batch",
                    ),
                    queues.models.PortableIndex(
                        condition=models.Q(("workflow_id__isnull", False)),
                        fields=["workflow_id"],
                        name="archived_workflow",
                    ),
                    queues.models.PortableIndex(
                        condition=models.Q(("unique_key__isnull", False)),
                        fields=["unique_key"],
                        name="archived_unique_key",
                    ),
                ],
            },
        ),
        migrations.RunPython(_binary_name, migrations.RunPython.noop),
    ]
