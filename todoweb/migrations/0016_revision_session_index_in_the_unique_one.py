"""A revision's session needs no index of its own: the unique (session, number) index
leads with it. The index is dropped by its name (the same on SQLite and PostgreSQL),
so that SQLite does not copy the whole revision table to alter the field."""

import django.db.models.deletion
from django.db import migrations, models

INDEX = "todoweb_revision_session_id_e5c0b03c"


class Migration(migrations.Migration):
    dependencies = [
        ("todoweb", "0015_webhook_delivery_endpoint_index"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(
                    f'DROP INDEX IF EXISTS "{INDEX}"',
                    reverse_sql=f'CREATE INDEX "{INDEX}" ON "todoweb_revision" ("session_id")',
                ),
            ],
            state_operations=[
                migrations.AlterField(
                    model_name="revision",
                    name="session",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="revisions",
                        to="todoweb.session",
                    ),
                ),
            ],
        ),
    ]
