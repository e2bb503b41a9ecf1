from django.apps import AppConfig


class TodowebConfig(AppConfig):
    name = "todoweb"
    verbose_name = "todoweb"
    default_auto_field = "django.db.models.BigAutoField"
