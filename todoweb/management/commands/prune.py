"""prune: drop what is older than TODOWEB_RETENTION_DAYS (archived sessions, old revisions)."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser
from django.db.models import F
from django.utils import timezone

from ...models import Revision, Session


class Command(BaseCommand):
    help = (
        "Delete archived sessions and revisions older than TODOWEB_RETENTION_DAYS. "
        "A session's latest revision is always kept: it is the current plan."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--days", type=int, default=settings.TODOWEB_RETENTION_DAYS)
        parser.add_argument("--dry-run", action="store_true")

    def handle(self, *args, days: int, dry_run: bool, **options) -> None:
        cutoff = timezone.now() - timedelta(days=days)
        sessions = Session.objects.filter(archived_at__lt=cutoff)
        revisions = Revision.objects.filter(created_at__lt=cutoff).exclude(number=F("session__revision"))
        counts = {
            "archived sessions": sessions.count(),
            "revisions": revisions.count(),
        }
        if not dry_run:
            sessions.delete()
            revisions.delete()
        verb = "Would delete" if dry_run else "Deleted"
        self.stdout.write(
            f"{verb} " + ", ".join(f"{n} {what}" for what, n in counts.items()) + f" (older than {days} days)."
        )
