"""Batch and workflow callbacks."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("queues", "0020_priority_order_due_index")]

    operations = [
        migrations.AddField(
            model_name=model,
            name=name,
            field=models.JSONField(blank=True, default=dict, editable=False),
        )
        for model in ("batch", "workflow")
        for name in ("callbacks", "callback_jobs")
    ]
