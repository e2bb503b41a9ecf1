"""prune: drop what is older than TODOWEB_RETENTION_DAYS (archived sessions, old revisions)."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from todoweb.models import Revision, Session

# A century: past it the date arithmetic overflows.
MAX_DAYS = 36500
# Archived sessions deleted per transaction: each holds the write lock (SQLite) or
# the sessions' rows (PostgreSQL) while it deletes, so keep it short.
BATCH = 100


class Command(BaseCommand):
    help = (
        "Delete archived sessions and revisions older than TODOWEB_RETENTION_DAYS. "
        "A session's latest revision is always kept (it is the current plan), and so is the revision "
        "its agent last saw, from which a person's edits are told to it."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--days", type=int, default=settings.TODOWEB_RETENTION_DAYS)
        parser.add_argument("--dry-run", action="store_true")

    def handle(self, *args, days: int, dry_run: bool, **options) -> None:
        if not 0 <= days <= MAX_DAYS:
            raise CommandError(f"--days must be between 0 and {MAX_DAYS}, not {days}")
        cutoff = timezone.now() - timedelta(days=days)
        if dry_run:
            counts = {"archived sessions": archived(cutoff).count(), "revisions": old_revisions(cutoff).count()}
        else:
            counts = {"archived sessions": delete_archived(cutoff), "revisions": old_revisions(cutoff).delete()[0]}
        verb = "Would delete" if dry_run else "Deleted"
        self.stdout.write(
            f"{verb} " + ", ".join(f"{n} {what}" for what, n in counts.items()) + f" (older than {days} days)."
        )


def archived(cutoff: datetime):
    return Session.objects.filter(archived_at__lt=cutoff)


def old_revisions(cutoff: datetime):
    # Older than the one the agent last saw: the current revision, and the base of
    # the edits it has not been told of, stay.
    return Revision.objects.filter(created_at__lt=cutoff, number__lt=F("session__agent_revision"))


def delete_archived(cutoff: datetime) -> int:
    """Delete the sessions archived before `cutoff`, and their revisions. An agent may
    write to one meanwhile, which brings it back: each batch locks its sessions and
    deletes only those still archived, so a write that was answered is never deleted
    (a write that comes after the lock waits, finds the session gone, and starts a
    new one)."""
    deleted = 0
    candidates = list(archived(cutoff).order_by("pk").values_list("pk", flat=True))
    for start in range(0, len(candidates), BATCH):
        with transaction.atomic():
            locked = archived(cutoff).filter(pk__in=candidates[start : start + BATCH]).select_for_update()
            pks = list(locked.values_list("pk", flat=True))
            if pks:
                Revision.objects.filter(session_id__in=pks).delete()
                deleted += Session.objects.filter(pk__in=pks).delete()[1].get(Session._meta.label, 0)
    return deleted
