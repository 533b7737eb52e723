# Queue names compare exactly on MySQL/MariaDB too. Their default utf8mb4 collations
# (utf8mb4_general_ci, utf8mb4_unicode_ci) compare case-insensitively and weigh every character
# outside the Basic Multilingual Plane alike, so "emails" and "Emails", or "q😀" and "q🐍", were
# one queue there (sharing jobs, pauses and counts) and two everywhere else. utf8mb4_bin
# compares code points, as PostgreSQL and SQLite do (trailing spaces, which a PAD SPACE
# collation would ignore, are refused by validation). MODIFY keeps the columns' indexes; it
# rebuilds each table. A later AlterField of one of these columns would drop the collation
# again: repeat it there.

from django.db import migrations

# (table, nullability) of every `queue_name` column.
COLUMNS = [
    ("queues_job", "NOT NULL"),
    ("queues_jobcount", "NOT NULL"),
    ("queues_completioncount", "NOT NULL"),
    ("queues_queuepause", "NOT NULL"),
    ("queues_reaperrun", "NULL"),
]


def _modify(collation: str):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor != "mysql":
            return
        for table, null in COLUMNS:
            schema_editor.execute(
                f"ALTER TABLE {table} MODIFY queue_name VARCHAR(255) "
                f"CHARACTER SET utf8mb4 COLLATE {collation} {null}"
            )

    return run


class Migration(migrations.Migration):
    # DDL: MySQL/MariaDB commit it at once, and Django refuses it inside a transaction there.
    atomic = False

    dependencies = [
        ("queues", "0007_job_claimed_by"),
    ]

    operations = [
        migrations.RunPython(_modify("utf8mb4_bin"), _modify("utf8mb4_unicode_ci")),
    ]
