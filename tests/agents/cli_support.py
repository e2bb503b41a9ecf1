"""What the Gemini CLI, Qwen Code and opencode tests share: a plan of three todo
calls and the lists todoweb must hold after each, the docs/agents.md recipes with the test
server's address swapped in, and the checks of what the board showed live."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from tests.agents.conftest import steps
from tests.agents.fake_model import Call, Script, Turn

README_URL = "http://127.0.0.1:8000"
PROMPT = "Fix the bug in the shop's checkout and keep a todo list while you work."
DONE = "The bug is fixed."


@dataclass(frozen=True)
class Plan:
    """Three calls of one todo tool, as the model makes them, and the list todoweb
    must hold after each: (content, canonical status) pairs."""

    calls: tuple[Call, Call, Call]
    revisions: tuple[list[tuple[str, str]], list[tuple[str, str]], list[tuple[str, str]]]

    def renamed(self, name: str) -> Plan:
        """The same calls of the tool as the CLI offers it under another name (an MCP tool)."""
        return Plan(tuple(Call(name, call.input) for call in self.calls), self.revisions)  # type: ignore[arg-type]


def script(calls: tuple[Call, ...], before_turn: Any, *, first: tuple[Call, ...] = ()) -> Script:
    """The model's turns: `first` (one call a turn, e.g. a tool search), then each
    todo call, then a closing text."""
    turns = [Turn(text="Let me track this.", calls=(call,)) for call in (*first, *calls)]
    return Script([*turns, Turn(text=DONE)], before_turn=before_turn)


def at(url: str, recipe: Any) -> Any:
    """A docs/agents.md recipe (JSON) pointing at the test server instead of the recipe's address."""
    return json.loads(json.dumps(recipe).replace(README_URL, url))


def merged(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    """`base` with `extra` merged in, objects key by key (a settings file with two parts)."""
    result = dict(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = merged(result[key], value)
        else:
            result[key] = value
    return result


def check_revisions(
    revisions: list[dict[str, Any]],
    plan: Plan,
    *,
    tool: str,
    dialect: str,
    call_ids: list[str | None] | re.Pattern[str],
    context: str,
) -> None:
    """todoweb holds exactly the plan's three revisions, written by `tool` in `dialect`
    with the tool call ids given (a list, or a pattern each id matches, all distinct)."""
    assert [(r["revision"], r["written"]["tool"], r["written"]["dialect"], steps(r["todos"])) for r in revisions] == [
        (n, tool, dialect, revision) for n, revision in enumerate(plan.revisions, 1)
    ], context
    assert [r["written"]["input"] for r in revisions] == [call.input for call in plan.calls], context
    ids = [r["written"]["call_id"] for r in revisions]
    if isinstance(call_ids, re.Pattern):
        assert all(isinstance(i, str) and call_ids.fullmatch(i) for i in ids) and len(set(ids)) == 3, (ids, context)
    else:
        assert ids == call_ids, context


def check_board(board: Any, plan: Plan, context: str) -> None:
    """Each revision reached the open panel before the model's next turn, with its steps,
    and the dashboard listed the session at each revision."""
    expected = {n: revision for n, revision in enumerate(plan.revisions, 1)}
    assert board.live == {n: True for n in expected}, (board.live, board.failures, context)
    [panel] = board.shown().values()
    assert {event["revision"]: steps(event["todos"]) for event in panel} == expected, context
    assert [summary["revision"] for summary in board.summaries] == list(expected), board.summaries
