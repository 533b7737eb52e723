"""Batch and workflow callbacks."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("queues", "0020_priority_order_due_index")]

    operations = []
