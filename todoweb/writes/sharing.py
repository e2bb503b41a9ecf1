"""Share links: read-only, expiring, revocable URLs to one session's panel.

Only the digest of a link's token is stored; the raw token exists in the URL handed
to the creator. Revoking closes the sockets opened with it (see consumers).
"""

from __future__ import annotations

import secrets
from datetime import timedelta

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone
from pydantic import BaseModel, ConfigDict, Field

from todoweb.live import events
from todoweb.models import Session, ShareLink, digest

DEFAULT_EXPIRES_IN = 7 * 24 * 3600
MIN_EXPIRES_IN = 60
MAX_EXPIRES_IN = 90 * 24 * 3600


class NewShareLink(BaseModel):
    """A share link asked for (by API or from the board): how long it opens the session."""

    model_config = ConfigDict(extra="forbid")

    expires_in: int = Field(DEFAULT_EXPIRES_IN, ge=MIN_EXPIRES_IN, le=MAX_EXPIRES_IN, description="Seconds")


def share_create(*, session: Session, expires_in: int = DEFAULT_EXPIRES_IN) -> tuple[ShareLink, str]:
    """Returns the link and its raw token (shown once)."""
    raw = "sh_" + secrets.token_urlsafe(32)
    link = ShareLink.objects.create(
        session=session, digest=digest(raw), expires_at=timezone.now() + timedelta(seconds=expires_in)
    )
    return link, raw


def share_revoke_all(*, session: Session) -> int:
    """Revokes every live link of the session and hangs up the sockets opened with them."""
    with transaction.atomic():
        count = ShareLink.objects.filter(session=session, revoked_at__isnull=True).update(revoked_at=timezone.now())
        events.publish_on_commit(events.share_revoked_frames(public_id=session.public_id))
    return count


def share_revoke(links: QuerySet[ShareLink]) -> int:
    """Revokes these links and hangs up the sockets of their sessions' share viewers."""
    with transaction.atomic():
        revoked: dict[str, list[int]] = {}
        for pk, public_id in links.filter(revoked_at__isnull=True).values_list("pk", "session__public_id"):
            revoked.setdefault(public_id, []).append(pk)
        count = ShareLink.objects.filter(pk__in=[pk for pks in revoked.values() for pk in pks]).update(
            revoked_at=timezone.now()
        )
        for public_id, pks in revoked.items():
            events.publish_on_commit(events.share_revoked_frames(public_id=public_id, links=pks))
    return count


def share_url(session: Session, raw: str) -> str:
    return f"{session.get_absolute_url()}?share={raw}"
