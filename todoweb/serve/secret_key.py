"""The one key todoweb will not serve with: the development key in its repository."""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured


def refuse_the_development_key() -> None:
    """Raise unless SECRET_KEY is a key of the deployment's own (or DEBUG is on): anyone
    can read the repository's key, and with it forge session cookies."""
    if not settings.DEBUG and settings.SECRET_KEY == settings.DEVELOPMENT_SECRET_KEY:
        raise ImproperlyConfigured(
            "SECRET_KEY is not set. todoweb will not serve with the development key from its repository "
            "unless DEBUG=1. Set SECRET_KEY to a long random value, e.g. the output of "
            "python -c 'import secrets; print(secrets.token_urlsafe(50))' "
            "(`make run` keeps one in .run/secret-key)."
        )
