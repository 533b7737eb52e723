"""The archive of finished jobs."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("queues", "0022_job_trace_context")]

    operations = []
