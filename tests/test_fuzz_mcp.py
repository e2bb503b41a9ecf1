"""The MCP server refuses what the tool endpoint refuses, in the same words: the same
hostile tool arguments (overflowing numbers, NaN, deep nesting, NUL, lone surrogates,
huge lists, bodies past the size limit) sent as a `tools/call` to /mcp and as a plain
call to the tool endpoint get the same refusal, each in its route's idiom, and
neither writes anything."""

from __future__ import annotations

import json
import re

import httpx
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from todoweb.calls.jsonio import JsonError, load
from todoweb.models import Revision, Session

pytestmark = pytest.mark.django_db(transaction=True)

# Text no JSON encoder writes, or that todoweb takes from no one.
HOSTILE_TOKENS = [
    "1e400",
    "-1E+999",
    "123456789012345678901234567890e300",
    "NaN",
    "-Infinity",
    '"\\u0000"',
    '"before\\u0000after"',
    '"\\ud800"',
    '"\\udfff\\ud800"',
    "[" * 70 + "]" * 70,
    "[" * 100 + "]" * 100,
    "[" * 3000 + "]" * 3000,
    "[" + ", ".join(["0"] * 1001) + "]",
    "[" + ", ".join(["{}"] * 100_000) + "]",
    '"' + "x" * 300_000 + '"',
    "{",
    "[1,]",
]
TOOLS = ["TodoWrite", "TodoRead", "SetTodoList", "todo_write", "update_plan", "write_todos", "todo", "NoSuchTool"]
FIELDS = ["todos", "items", "steps", "plan", "content", "status", "activeForm", "title", "id"]
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-1000, 1000)
    | st.sampled_from(["pending", "in_progress", "done", "中文", "🚀", "<b>x</b>", ""])
)
# A value with at least one hostile token somewhere in it ("@@n@@" until spliced).
HOSTILE = st.recursive(
    st.sampled_from(range(len(HOSTILE_TOKENS))).map(lambda n: f"@@{n}@@"),
    lambda children: (
        st.tuples(children, st.lists(SCALARS, max_size=3), st.integers(0, 3)).map(
            lambda t: [*t[1][: t[2]], t[0], *t[1][t[2] :]]
        )
        | st.tuples(
            st.sampled_from(FIELDS), children, st.dictionaries(st.sampled_from(FIELDS), SCALARS, max_size=3)
        ).map(lambda t: t[2] | {t[0]: t[1]})
    ),
    max_leaves=4,
)
ARGUMENTS = st.tuples(st.sampled_from(FIELDS), HOSTILE, st.dictionaries(st.sampled_from(FIELDS), SCALARS, max_size=2))


def splice(value) -> str:
    text = json.dumps(value, ensure_ascii=False)
    for n, token in enumerate(HOSTILE_TOKENS):
        text = text.replace(f'"@@{n}@@"', token)
    return text


def arguments_text(field: str, hostile, others: dict) -> str:
    return splice(others | {field: hostile})


def mcp_body(tool: str, arguments: str, era: str) -> str:
    meta = ""
    if era == "stateless":
        envelope = {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        }
        meta = f', "_meta": {json.dumps(envelope)}'
    return (
        '{"jsonrpc": "2.0", "id": 1, "method": "tools/call", '
        f'"params": {{"name": {json.dumps(tool)}, "arguments": {arguments}{meta}}}}}'
    )


def mcp_headers(token: str, tool: str, era: str) -> dict[str, str]:
    headers = {
        "Authorization": f"Bearer {token}",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
    }
    if era == "stateless":
        return headers | {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": tool}
    return headers | {"MCP-Protocol-Version": "2025-11-25"}


def rpc_answer(response: httpx.Response) -> dict:
    if response.headers["content-type"].startswith("text/event-stream"):
        data = [line[len("data:") :] for line in response.text.splitlines() if line.startswith("data:")]
        return json.loads(data[-1])
    return response.json()


def without_position(message: str) -> str:
    """The words of a message; a position in the text, or its size, counts in each
    route's own body."""
    message = re.sub(r"^The body is [\d,]+ bytes;", "The body is N bytes;", message)
    return re.sub(r": line \d+ column \d+ \(char \d+\)$| at byte \d+\)$", "", message)


def is_json_text(body: str) -> bool:
    try:
        load(body, what="The body")
    except JsonError:
        return False
    return True


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(arguments=ARGUMENTS, tool=st.sampled_from(TOOLS), era=st.sampled_from(["handshake", "stateless"]))
def test_mcp_refuses_the_hostile_arguments_the_tool_endpoint_refuses_in_its_words(
    asgi_server, token, arguments, tool, era
):
    text = arguments_text(*arguments)
    endpoint = httpx.post(
        f"{asgi_server.url}/api/v1/sessions/fuzz/tool",
        content=f'{{"tool": {json.dumps(tool)}, "input": {text}}}'.encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        timeout=30,
    )
    body = mcp_body(tool, text, era)
    answer = httpx.post(
        f"{asgi_server.url}/mcp?session=fuzz", content=body.encode(), headers=mcp_headers(token, tool, era), timeout=30
    )
    refusal = endpoint.json()["error"]
    assert endpoint.status_code in (400, 413, 422), endpoint.text
    if endpoint.status_code == 413:
        # Over the limit: a 413 in the API's words.
        event("413 from both")
        assert answer.status_code == 413, answer.text[:300]
        assert without_position(answer.json()["error"]["message"]) == without_position(refusal["message"])
    elif not is_json_text(body):
        # No JSON at all: a parse error, HTTP 400, in the API's words.
        event(f"{endpoint.status_code} from the endpoint, a parse error from /mcp")
        assert answer.status_code == 400, answer.text[:300]
        error = answer.json()["error"]
        assert error["code"] == -32700
        assert without_position(error["message"]) == without_position(refusal["message"])
    else:
        # JSON, with arguments the endpoint refuses: a tool error for the model, in the endpoint's words.
        event(f"{endpoint.status_code} from the endpoint, a tool error from /mcp")
        assert answer.status_code == 200, answer.text[:300]
        result = rpc_answer(answer)["result"]
        assert result["isError"] is True
        assert without_position(result["content"][0]["text"]) == without_position(refusal["message"])
    assert not Revision.objects.exists()
    assert not Session.objects.exists()
