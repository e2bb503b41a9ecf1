"""Issuing and revoking API tokens (the raw token exists only in the creator's hands)."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from todoweb.live.access import announce
from todoweb.models import ApiToken, Project


def token_create(*, project_slug: str, scope: str = ApiToken.Scope.WRITE, name: str = "") -> tuple[ApiToken, str, bool]:
    """Returns the token, its raw value, and whether the project was created."""
    with transaction.atomic():
        project, created = Project.objects.get_or_create(slug=project_slug, defaults={"name": project_slug})
        token = ApiToken(project=project, scope=scope, name=name)
        raw = ApiToken.new_raw()
        token.set_raw(raw)
        token.save()
    return token, raw, created


def token_revoke(tokens) -> int:
    """Revokes these tokens; the event streams opened with them end at once."""
    with transaction.atomic():
        ids = list(tokens.filter(revoked_at__isnull=True).values_list("pk", flat=True))
        count = ApiToken.objects.filter(pk__in=ids).update(revoked_at=timezone.now())
        announce(tokens=ids)
    return count


def project_token_create(project: Project, *, name: str, scope: str) -> tuple[ApiToken, str]:
    """A token of an existing project (the board's team page): it and its raw value."""
    token = ApiToken(project=project, scope=scope, name=name)
    raw = ApiToken.new_raw()
    token.set_raw(raw)
    token.save()
    return token, raw
