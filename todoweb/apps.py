from __future__ import annotations

from django.apps import AppConfig
from django.conf import settings


class TodowebConfig(AppConfig):
    name = "todoweb"
    verbose_name = "todoweb"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from todoweb import fences
        from todoweb.live import access  # noqa: F401  (its receivers announce access that ends)
        from todoweb.logs import install_redaction

        install_redaction(settings.TODOWEB_REDACTED_LOGGERS)
        fences.report()
