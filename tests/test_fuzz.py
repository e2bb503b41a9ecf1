"""Generated input never yields a 500 or a partial write, for any tool or envelope."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from todoweb import dialects
from todoweb.models import Revision, Session

FIELDS = [
    "todos",
    "items",
    "steps",
    "plan",
    "task",
    "explanation",
    "title",
    "status",
    "content",
    "activeForm",
    "description",
    "text",
    "id",
    "step",
    "subject",
    "taskId",
    "owner",
    "addBlockedBy",
    "addBlocks",
    "metadata",
]
STATUSES = [
    "pending",
    "in_progress",
    "completed",
    "done",
    "running",
    "failed",
    "blocked",
    "cancelled",
    "skipped",
    "deleted",
    "PENDING",
    "",
]
TEXT = st.text(alphabet=st.characters(codec="utf-8"), max_size=12) | st.sampled_from(
    ["<script>alert(1)</script>", "🚀", "中文", "   ", "\u3000", "1", "2"]
)
SCALARS = (
    st.none() | st.booleans() | st.integers(-3, 30) | st.floats(allow_nan=False) | TEXT | st.sampled_from(STATUSES)
)
JSON = st.recursive(
    SCALARS,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.sampled_from(FIELDS) | TEXT, children, max_size=5)
    ),
    max_leaves=25,
)
ITEM = st.fixed_dictionaries(
    {},
    optional={
        name: st.sampled_from(STATUSES) | TEXT | SCALARS
        for name in ["content", "status", "activeForm", "title", "description", "text", "id", "step"]
    },
)
ARGS = (
    st.fixed_dictionaries(
        {}, optional={key: st.lists(ITEM, max_size=4) | JSON for key in ["todos", "items", "steps", "plan"]}
    )
    | JSON
)
TOOLS = st.sampled_from(sorted(dialects.tool_names())) | TEXT


def envelope(draw_tool: str, args, form: str, call_id: str):
    if form == "anthropic":
        return {"type": "tool_use", "id": call_id, "name": draw_tool, "input": args}
    if form == "chat":
        return {"id": call_id, "type": "function", "function": {"name": draw_tool, "arguments": json.dumps(args)}}
    if form == "responses":
        return {"type": "function_call", "call_id": call_id, "name": draw_tool, "arguments": json.dumps(args)}
    return {"tool": draw_tool, "id": call_id, "input": args}


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    tool=TOOLS,
    args=ARGS,
    form=st.sampled_from(["anthropic", "chat", "responses", "plain"]),
    call_id=st.text(alphabet="abc123", min_size=1, max_size=4),
    native=st.booleans(),
)
def test_it_never_fails_with_500_nor_writes_part_of_a_rejected_call(api, tool, args, form, call_id, native):
    before = Revision.objects.count()
    r = api.tool("fuzz", envelope(tool, args, form, call_id), query="?reply=native" if native else "")
    assert r.status_code < 500, r.content
    body = r.json()
    if r.status_code == 200:
        assert body["ok"] is True
        content = body["reply"].get("content", body["reply"].get("output"))
        assert content == body["output"]
        assert Revision.objects.count() - before in (0, 1)
    else:
        assert body["ok"] is False and body["error"]["code"]
        assert Revision.objects.count() == before
    session = Session.objects.filter(key="fuzz").first()
    if session is not None:
        assert session.revision == Revision.objects.filter(session=session).count()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=JSON)
def test_it_never_fails_with_500_on_any_json_body(api, body):
    r = api.tool("fuzz", body)
    assert r.status_code < 500, r.content
    assert r.json()["ok"] is (r.status_code == 200)
