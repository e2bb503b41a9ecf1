"""API tokens: hashed at rest, createtoken, X-Api-Key, last_used_at."""

from __future__ import annotations

from io import StringIO

from django.core.management import call_command

from tests.conftest import Api
from todoweb.models import ApiToken, Project


def test_it_creates_a_project_and_prints_the_raw_token_last(db):
    out = StringIO()
    call_command("createtoken", "team-x", "--scope", "read", "--name", "ci", stdout=out)
    raw = out.getvalue().strip().splitlines()[-1]
    assert raw.startswith("tw_") and " " not in raw
    token = ApiToken.objects.get()
    assert token.project.slug == "team-x" and token.scope == "read" and token.name == "ci"
    assert raw not in token.digest and token.digest != raw
    assert Api(raw).get("/api/v1/sessions").status_code == 200


def test_it_reuses_an_existing_project(project):
    call_command("createtoken", project.slug, stdout=StringIO())
    call_command("createtoken", project.slug, stdout=StringIO())
    assert Project.objects.count() == 1
    assert ApiToken.objects.filter(project=project).count() == 2


def test_it_accepts_the_x_api_key_header(token):
    api = Api(token)
    api.headers = {"X-Api-Key": token}
    assert api.get("/api/v1/sessions").status_code == 200


def test_it_records_last_use(token):
    assert ApiToken.objects.get().last_used_at is None
    Api(token).get("/api/v1/sessions")
    assert ApiToken.objects.get().last_used_at is not None
