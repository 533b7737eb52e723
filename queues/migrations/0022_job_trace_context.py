"""The trace context stored with a job (OpenTelemetry)."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("queues", "0021_group_callbacks")]

    operations = []
