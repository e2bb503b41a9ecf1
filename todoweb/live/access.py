"""Who may still watch: the access a live socket was let in with, checked again.

A socket is let in once, when it connects (todoweb.live.consumers): by a member's login
session, or by a share link. What let it in can end while it stays open: the person
logs out (or a password change ends their logins), leaves the project, is
deactivated or deleted; the link is revoked, deleted or expires, or its session is
archived. Two things hang such a socket up:

- At once: the change is announced to every process through the channel layer (an
  `access.changed` event, sent by the receivers at the end of this module, or the
  `share.revoked` event of todoweb.writes.sharing). A deleted link or an ended login closes
  its sockets on the spot; for a user's other changes, each process holds that user's
  sockets (they send nothing) until it has checked them again with `lost()`.
- Within todoweb.live.RECONCILE_EVERY seconds whatever became of that event (Redis
  down, a process that died before publishing): each process checks every socket it
  serves with `lost()`, a few queries for all of them, before it sends the frames it
  missed, and again as soon as its channel layer works after an outage.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from importlib import import_module
from typing import Any

from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY, get_user_model
from django.contrib.auth.signals import user_logged_out
from django.db.models.signals import m2m_changed, post_delete, post_save, pre_delete
from django.dispatch import receiver
from django.utils import timezone
from django.utils.crypto import constant_time_compare

from todoweb.live import events
from todoweb.models import ApiToken, Project, Session, ShareLink, digest
from todoweb.reads import visible_sessions

# Close codes the page understands (static/todoweb/live.js).
SIGNED_OUT = 4401  # the login session ended: log in again
FORBIDDEN = 4403  # this person may not watch this (any more)
ACCESS_CHANGED = 4409  # the dashboard's projects changed: reconnect for a fresh snapshot
SHARE_ENDED = 4410  # the share link was revoked, deleted or expired


@dataclass(frozen=True)
class Viewer:
    """What let a socket (or an event stream) in: a member's login, a share link, or an API token."""

    user: int | None = None  # the logged-in person's id (None: a share link's or a token's holder)
    login: str | None = None  # their login session's key
    project: int | None = None  # a member's panel: the watched session's project
    link: int | None = None  # a share link's id
    session: str | None = None  # a share link's session (its public id)
    dashboard: bool = False
    projects: frozenset[int] | None = None  # a dashboard's projects (None: staff, every project)
    token: int | None = None  # an API token's id (an event stream of todoweb.live.stream)


def login_digest(key: str) -> str:
    """How an ended login is named in events: the session key itself is a secret."""
    return hashlib.sha256(key.encode()).hexdigest()


def dashboard_scope(user) -> frozenset[int] | None:
    """The projects whose sessions the user's dashboard shows (None: staff, all of them)."""
    if user.is_staff:
        return None
    return frozenset(Project.objects.filter(members=user).values_list("pk", flat=True))


def lost(viewers: Collection[Viewer], *, now: datetime | None = None) -> dict[Viewer, int]:
    """The viewers that may no longer watch, each with the code to close its socket with.

    At most five queries, however many viewers: their links, their tokens, their login
    sessions, their users and those users' projects."""
    now = now or timezone.now()
    links = live_links({v.link for v in viewers if v.link is not None}, now)
    tokens = live_tokens({v.token for v in viewers if v.token is not None})
    logins = login_sessions({v.login for v in viewers if v.login is not None}, now)
    user_ids = {v.user for v in viewers if v.user is not None}
    users = {user.pk: user for user in get_user_model().objects.filter(pk__in=user_ids)} if user_ids else {}
    members = memberships([pk for pk, user in users.items() if not user.is_staff])
    verdicts = {}
    for viewer in set(viewers):
        if viewer.link is not None:
            code = None if links.get(viewer.link) == viewer.session else SHARE_ENDED
        elif viewer.token is not None:
            code = None if viewer.token in tokens else FORBIDDEN
        else:
            code = member_verdict(viewer, logins.get(viewer.login or ""), users.get(viewer.user), members)
        if code is not None:
            verdicts[viewer] = code
    return verdicts


def member_verdict(
    viewer: Viewer, login: dict[str, Any] | None, user, members: dict[int, frozenset[int]]
) -> int | None:
    # What django.contrib.auth.get_user checks on each request, for a login read in bulk.
    if login is None or user is None or login.get(SESSION_KEY) != str(user.pk):
        return SIGNED_OUT
    if login.get(BACKEND_SESSION_KEY) not in settings.AUTHENTICATION_BACKENDS or not same_password(user, login):
        return SIGNED_OUT
    if not user.is_active:
        return FORBIDDEN
    scope = None if user.is_staff else members.get(user.pk, frozenset())
    if viewer.dashboard:
        return None if scope == viewer.projects else ACCESS_CHANGED
    if scope is not None and viewer.project not in scope:
        return FORBIDDEN
    return None


def same_password(user, login: dict[str, Any]) -> bool:
    """The login was made with the user's current password (a change ends the others)."""
    session_hash = login.get(HASH_SESSION_KEY)
    if not session_hash:
        return False
    hashes = [user.get_session_auth_hash(), *user.get_session_auth_fallback_hash()]
    return any(constant_time_compare(session_hash, known) for known in hashes)


def live_links(ids: set[int], now: datetime) -> dict[int, str]:
    """The links among `ids` that still open their session: id -> the session's public id."""
    if not ids:
        return {}
    rows = ShareLink.objects.filter(pk__in=ids, revoked_at__isnull=True, expires_at__gt=now)
    rows = rows.filter(session__archived_at__isnull=True).values_list("pk", "session__public_id")
    return dict(rows)


def live_tokens(ids: set[int]) -> set[int]:
    """The tokens among `ids` not revoked (nor deleted)."""
    if not ids:
        return set()
    return set(ApiToken.objects.filter(pk__in=ids, revoked_at__isnull=True).values_list("pk", flat=True))


def login_sessions(keys: set[str], now: datetime) -> dict[str, dict[str, Any]]:
    """The login sessions among `keys` that have not ended: key -> their data."""
    if not keys:
        return {}
    store = import_module(settings.SESSION_ENGINE).SessionStore
    if hasattr(store, "get_model_class"):
        # Sessions in the database (Django's default): one query for all of them.
        rows = store.get_model_class().objects.filter(session_key__in=keys, expire_date__gt=now)
        return {key: decoded(data) for key, data in rows.values_list("session_key", "session_data")}
    return {key: data for key in keys if (data := store(key).load())}


@lru_cache(maxsize=4096)
def decoded(data: str) -> dict[str, Any]:
    # The same logins are read every few seconds: each is decoded (its signature
    # checked) once while it stays unchanged.
    return import_module(settings.SESSION_ENGINE).SessionStore().decode(data)


def memberships(user_ids: list[int]) -> dict[int, frozenset[int]]:
    if not user_ids:
        return {}
    found: dict[int, set[int]] = {}
    rows = Project.members.through.objects.filter(user_id__in=user_ids).values_list("user_id", "project_id")
    for user_id, project_id in rows:
        found.setdefault(user_id, set()).add(project_id)
    return {user_id: frozenset(projects) for user_id, projects in found.items()}


# --- what ends access, announced to every process ---------------------------
# Receivers, because these changes come from Django's own views (logout, the admin's
# user and project forms, deletions) as well as from todoweb's: each only announces.


def announce(
    *, users: Iterable[int] = (), logins: Iterable[str] = (), links: Iterable[int] = (), tokens: Iterable[int] = ()
) -> None:
    changed = events.access_changed_frames(
        users=sorted(set(users)), logins=sorted(set(logins)), links=sorted(set(links)), tokens=sorted(set(tokens))
    )
    events.publish_on_commit(changed)


@receiver(user_logged_out)
def login_ended(sender, request=None, user=None, **kwargs) -> None:
    # Sent before the session is flushed: the event names the login itself, which its
    # sockets trust, rather than asking for a check that could still find it.
    session = getattr(request, "session", None)
    if session is not None and session.session_key:
        announce(logins=[login_digest(session.session_key)])


@receiver(post_save, sender=settings.AUTH_USER_MODEL)
def account_changed(sender, instance, created: bool, update_fields=None, **kwargs) -> None:
    # Every login saves last_login: that takes nothing away.
    if not created and not (update_fields and set(update_fields) <= {"last_login"}):
        announce(users=[instance.pk])


@receiver(post_delete, sender=settings.AUTH_USER_MODEL)
def account_deleted(sender, instance, **kwargs) -> None:
    announce(users=[instance.pk])


@receiver(m2m_changed, sender=Project.members.through)
def members_changed(sender, instance, action: str, reverse: bool, pk_set=None, **kwargs) -> None:
    if reverse:  # user.todoweb_projects.add(...) and the like
        users = [instance.pk]
    elif action == "pre_clear":
        # Once cleared, the project no longer knows who its members were.
        instance._todoweb_cleared = list(instance.members.values_list("pk", flat=True))
        return
    elif action == "post_clear":
        users = getattr(instance, "_todoweb_cleared", [])
    else:
        users = list(pk_set or ())
    if action in ("post_add", "post_remove", "post_clear") and users:
        announce(users=users)


@receiver(post_save, sender=Project.members.through)
@receiver(post_delete, sender=Project.members.through)
def membership_changed(sender, instance, created: bool = True, **kwargs) -> None:
    # A membership saved or deleted row by row (the admin's inline, the board's team
    # page) sends no m2m_changed. A role change takes no watching away: only a new
    # membership (post_save created) or a deleted one is announced.
    if created:
        announce(users=[instance.user_id])


@receiver(pre_delete, sender=Project)
def project_deleted(sender, instance, **kwargs) -> None:
    # Its memberships go with it, without an m2m_changed: name its members now (the
    # event is sent once the deletion commits).
    announce(users=instance.members.values_list("pk", flat=True))


@receiver(post_delete, sender=ShareLink)
def link_deleted(sender, instance, **kwargs) -> None:
    # Revoking keeps the row and says so (todoweb.writes.sharing); a deleted link (the admin's
    # Delete, its session deleted) must close its sockets all the same.
    announce(links=[instance.pk])


@receiver(post_save, sender=ApiToken)
def token_saved(sender, instance, created: bool, **kwargs) -> None:
    if instance.revoked_at is not None:
        announce(tokens=[instance.pk])


@receiver(post_delete, sender=ApiToken)
def token_deleted(sender, instance, **kwargs) -> None:
    announce(tokens=[instance.pk])


def valid_share_link(*, public_id: str, raw: str | None, now: datetime | None = None) -> ShareLink | None:
    """The link a raw token names, if it is for this session and still valid."""
    if not raw or len(raw) > 200:
        return None
    link = (
        ShareLink.objects.select_related("session")
        .filter(digest=digest(raw), session__public_id=public_id, session__archived_at__isnull=True)
        .first()
    )
    if link is None or not link.is_valid_at(now or timezone.now()):
        return None
    return link


def session_for_viewer(*, user, public_id: str, share: str | None) -> tuple[Session, ShareLink | None] | None:
    """The session a browser may watch: a member's (staff: any) or one its share link opens.

    Returns the session and the share link used (None for a logged-in member), or None
    when the viewer may not see it.
    """
    if user is not None and user.is_authenticated:
        session = visible_sessions(user).with_current().filter(public_id=public_id).first()
        if session is not None:
            return session, None
    link = valid_share_link(public_id=public_id, raw=share)
    if link is None:
        return None
    session = Session.objects.with_current().select_related("project", "parent").get(pk=link.session_id)
    return session, link
