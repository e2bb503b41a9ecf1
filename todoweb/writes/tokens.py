"""Issuing and revoking API tokens (the raw token exists only in the creator's hands)."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

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
    return tokens.filter(revoked_at__isnull=True).update(revoked_at=timezone.now())
