"""Archiving a session now revokes its share links; revoke those of the sessions
archived before, which an agent's write would otherwise bring back to life."""

from __future__ import annotations

from django.db import migrations
from django.utils import timezone


def revoke(apps, schema_editor) -> None:
    ShareLink = apps.get_model("todoweb", "ShareLink")
    ShareLink.objects.filter(session__archived_at__isnull=False, revoked_at__isnull=True).update(
        revoked_at=timezone.now()
    )


class Migration(migrations.Migration):
    dependencies = [("todoweb", "0004_people_edits_and_trend")]

    operations = [migrations.RunPython(revoke, migrations.RunPython.noop)]
