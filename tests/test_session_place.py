"""Where an agent works, on its session's card: the folder its hook reports (`cwd`) and
the git branch a command hook names in X-Todoweb-Branch."""

from __future__ import annotations

from todoweb.models import Session

TODOS = [{"content": "Fix the bug", "status": "in_progress", "activeForm": "Fixing the bug"}]


def hook(api, *, cwd: str, branch: str | None = None, call_id: str = "toolu_1"):
    body = {
        "session_id": "place-1",
        "cwd": cwd,
        "hook_event_name": "PostToolUse",
        "tool_name": "TodoWrite",
        "tool_use_id": call_id,
        "tool_input": {"todos": TODOS},
    }
    return api.post("/api/v1/hooks/claude-code", body, headers={"X-Todoweb-Branch": branch} if branch else None)


def test_it_keeps_the_folder_and_branch_the_hook_gives(api):
    assert hook(api, cwd="/home/me/shop", branch="fix/rounding").status_code == 200
    [summary] = api.get("/api/v1/sessions").json()["sessions"]
    assert (summary["workdir"], summary["branch"]) == ("/home/me/shop", "fix/rounding")


def test_a_later_call_moves_them_and_a_call_without_a_branch_keeps_the_last(api):
    hook(api, cwd="/home/me/shop", branch="main")
    hook(api, cwd="/home/me/shop/api", call_id="toolu_2")
    session = Session.objects.get(key="place-1")
    assert (session.workdir, session.branch) == ("/home/me/shop/api", "main")


def test_control_characters_in_a_branch_become_spaces(api):
    hook(api, cwd="/w/\x1b[31mshop", branch="main\x07\tx")
    session = Session.objects.get(key="place-1")
    assert (session.workdir, session.branch) == ("/w/ [31mshop", "main x")


def test_the_card_shows_the_last_folder_and_the_branch_as_text(api, client, member):
    """Agent text on a card is escaped; a branch in UTF-8 arrives as the header's bytes."""
    hook(api, cwd="/home/me/<b>shop", branch="修复/<i>x</i>".encode().decode("latin-1"))
    client.force_login(member)
    page = client.get("/").content.decode()
    assert '<span class="folder" title="/home/me/&lt;b&gt;shop">&lt;b&gt;shop</span>' in page
    assert '<span class="branch">修复/&lt;i&gt;x&lt;/i&gt;</span>' in page
    assert "<b>shop" not in page and "<i>x" not in page
