"""A long plan's panel as the server renders it, before any script runs: finished
steps folded behind a toggle past 12 steps (panel_fold.js does the same live)."""

from __future__ import annotations

import re

import pytest

from todoweb.models import Session


@pytest.fixture
def member_client(client, member):
    client.force_login(member)
    return client


def write(api, key: str, statuses: list[str]) -> str:
    # Gemini CLI's write_todos: it has cancelled steps too.
    todos = [{"description": f"Step {n}", "status": s} for n, s in enumerate(statuses)]
    response = api.call(key, "write_todos", {"todos": todos})
    assert response.status_code == 200, response.content
    return Session.objects.get(key=key).get_absolute_url()


def steps_list(html: str) -> str:
    return html[html.index('<ol class="steps" id="steps"') : html.index("</ol>", html.index('id="steps"'))]


def test_past_12_steps_the_finished_ones_are_folded_behind_a_toggle(api, member_client):
    url = write(api, "long", ["completed"] * 10 + ["cancelled", "in_progress", "pending"])
    listing = steps_list(member_client.get(url).content.decode())
    assert 'data-fold-after="12"' in listing
    assert re.search(
        r'<button type="button" class="fold-toggle" aria-expanded="false"[^>]*>.*11 completed or cancelled steps',
        listing,
    )
    assert len(re.findall(r'class="step status-(?:completed|cancelled)" data-id="\d+" hidden>', listing)) == 11
    assert re.search(r'class="step status-in_progress" data-id="\d+">', listing)
    assert re.search(r'class="step status-pending" data-id="\d+">', listing)


def test_12_steps_are_shown_whole(api, member_client):
    listing = steps_list(member_client.get(write(api, "twelve", ["completed"] * 11 + ["in_progress"])).content.decode())
    assert "fold-toggle" not in listing and " hidden>" not in listing


def test_a_long_plan_with_nothing_finished_has_no_toggle(api, member_client):
    listing = steps_list(member_client.get(write(api, "fresh", ["in_progress"] + ["pending"] * 14)).content.decode())
    assert "fold-toggle" not in listing and " hidden>" not in listing


def test_the_toggles_words_for_one_kind(api, member_client):
    listing = steps_list(member_client.get(write(api, "one", ["completed"] + ["pending"] * 12)).content.decode())
    assert '<span class="fold-label">1 completed step</span>' in listing
    listing = steps_list(member_client.get(write(api, "gone", ["cancelled"] * 2 + ["pending"] * 12)).content.decode())
    assert '<span class="fold-label">2 cancelled steps</span>' in listing


def test_the_page_has_the_toggles_template_for_the_script(api, member_client):
    html = member_client.get(write(api, "short", ["pending"])).content.decode()
    template = html[html.index('<template id="step-fold-template">') :].split("</template>")[0]
    assert 'class="fold-toggle"' in template and '<span class="fold-label"></span>' in template
