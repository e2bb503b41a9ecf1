"""createtoken PROJECT_SLUG [--scope write|read] [--name NAME]: prints the raw token last."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandParser
from django.utils.text import slugify

from todoweb.models import ApiToken
from todoweb.writes.tokens import token_create


class Command(BaseCommand):
    help = "Create an API token for a project (creating the project if needed). The raw token is the last line."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("project", help="project slug")
        parser.add_argument("--scope", choices=[s.value for s in ApiToken.Scope], default=ApiToken.Scope.WRITE)
        parser.add_argument("--name", default="")

    def handle(self, *args, project: str, scope: str, name: str, **options) -> None:
        slug = slugify(project)
        if not slug:
            self.stderr.write("The project slug must contain letters or digits.")
            raise SystemExit(2)
        token, raw, created = token_create(project_slug=slug, scope=scope, name=name)
        if created:
            self.stdout.write(f"Created project '{slug}'.")
        self.stdout.write(f"Token {token.prefix}… for project '{slug}', scope {scope}. It is shown once; keep it:")
        self.stdout.write(raw)
