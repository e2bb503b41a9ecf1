"""Finding the session a request names, within the token's project."""

from __future__ import annotations

import re

from todoweb.calls.errors import InvalidInput, NotFound
from todoweb.models import ApiToken, Session

SESSION_KEY = re.compile(r"[A-Za-z0-9._:@-]{1,200}")


def check_key(key: str) -> str:
    if not SESSION_KEY.fullmatch(key):
        raise InvalidInput(
            "Invalid session key: use 1-200 characters among letters, digits and . _ : @ -",
            details={"field": "session_key"},
        )
    return key


def get_session(token: ApiToken, key: str) -> Session:
    check_key(key)
    session = (
        Session.objects.with_current()
        .select_related("project", "parent")
        .filter(project=token.project, key=key, archived_at__isnull=True)
        .first()
    )
    if session is None:
        raise NotFound(f"Session '{key}' not found in project '{token.project.slug}'")
    return session
