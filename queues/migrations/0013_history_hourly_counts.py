# The history's hourly rows (queues.store.counters.rollup). Their queue_name compares exactly on
# MySQL/MariaDB as every other queue_name column does (see 0008).

from django.db import migrations, models


def _binary_name(apps, schema_editor):
    if schema_editor.connection.vendor == "mysql":
        schema_editor.execute(
            "ALTER TABLE queues_hourlycount MODIFY queue_name VARCHAR(255) "
            "CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL"
        )


class Migration(migrations.Migration):
    # DDL: MySQL/MariaDB commit it at once, and Django refuses it inside a transaction there.
    atomic = False


    dependencies = [
        ('queues', '0012_queue_config'),
    ]

    operations = [
        migrations.CreateModel(
            name='HourlyCount',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('queue_name', models.CharField(max_length=255)),
                ('hour', models.DateTimeField()),
                ('completed', models.BigIntegerField(default=0)),
                ('failed', models.BigIntegerField(default=0)),
                ('retried', models.BigIntegerField(default=0)),
            ],
            options={
                'indexes': [models.Index(fields=['hour'], name='hourly_count_hour')],
                'constraints': [models.UniqueConstraint(fields=('queue_name', 'hour'), name='hourly_count_unique')],
            },
        ),
        migrations.RunPython(_binary_name, migrations.RunPython.noop),
    ]
