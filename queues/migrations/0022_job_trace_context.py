"""The trace context stored with a job (OpenTelemetry)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("queues", "0021_group_callbacks")]

    operations = [
        migrations.AddField(
            model_name="job",
            name="trace_context",
            field=models.JSONField(blank=True, editable=False, null=True),
        ),
    ]
