"""Cursor's `todo_write` with `merge`, as Cursor's agent package runs it.

Cursor's leaked prompt gives only (schema, no replies, no rules). The rules and
replies here come from Cursor's agent code as recovered from a shipped bundle
(`packages/agent/dist/tools/core/todo/{todo,common}.js`, `tools/lenient-{array,enum,
boolean}.js`): there the tool is called `todo_write` only in its `dsv3-1018` prompt
version (the other versions call it `TodoWrite`), and that version is reproduced. Its
error texts were checked against zod 4.6.7 running the same schema.

How a call is read (zod, every problem reported at once as zod's issue list, behind
`Invalid arguments: `):

- no `merge` key means `merge: true`; `"true"`/`"false"` strings are booleans; any
  other value fails the discriminated union on `merge`;
- `todos` must be a list (a string holding a JSON list is decoded first); items need a
  string `id` and a `status` (pending, in_progress, completed, cancelled; matched
  without case when one fits); `content` is required with `merge: false` only;
  unknown keys anywhere are dropped; the prompt's `minItems: 2` is not enforced
  ("Actual validation … does not enforce this minimum", the source says).

Then:

- `merge: true` upserts by id (unchanged steps keep their place, new ids go last, a
  repeated id updates the same step); a new id without content is refused with
  `Invalid argument: must provide 'content' for new todos items` and nothing is kept;
- `merge: false` replaces the list (a repeated id is kept twice); an empty content
  falls back to the content the id had;
- at most 50 finished (completed/cancelled) steps are kept: the oldest others go.
  Cursor orders them by update time, which todoweb does not keep: steps touched by
  the call count as newest, then later positions before earlier ones (the source's
  tie-break). Steps pruned so are removed on purpose, not "dropped".

The reply is Cursor's success text, its in-progress and cleanup reminders, and, after
a merge only, the whole list as JSON (`{id, content, status}`). A 2025 Cursor IDE
transcript shows a near variant ("your TODO list", keys content/status/id): this
module follows the source. Non-Cursor statuses on the board (failed, blocked) are
shown as they are where Cursor would say `unspecified`.

Chat-form arguments that are not a JSON object get todoweb's own 400: Cursor's
JSON.parse errors are worded by the V8 version that runs it.

Not verified: the bundle's zod version (error texts follow zod 4.6.7: other 4.x
versions word the `merge` issue differently), and the lenient-array repairs for
leaked tool markup (only whole and tail-trimmed JSON lists are decoded here).
"""

from __future__ import annotations

import json
from typing import Any

from todoweb.calls.errors import InvalidInput
from todoweb.calls.jsonio import compact_json
from todoweb.dialects.base import MAX_REPORTED_ERRORS, Outcome, ToolDefinition, describe
from todoweb.plan.steps import Item

NAME = "cursor"
TOOLS = ("todo_write",)
SHAPE = "{merge: bool, todos: [{id, content, status}]}"

STATUSES = ("pending", "in_progress", "completed", "cancelled")
FINISHED = ("completed", "cancelled")
MAX_FINISHED_TODOS = 50
CLEANUP_THRESHOLD = 20

SUCCESS = (
    "Successfully updated TODOs. Make sure to follow and update your TODO list as you make progress. "
    "Cancel and add new TODO tasks as needed when the user makes a correction or follow-up request."
)
NONE_IN_PROGRESS = " No TODOs are marked in-progress, make sure to mark them before starting the next."
CLEANUP = "\n\n<system_reminder>You have many finished todos. Consider cleaning up old ones.</system_reminder>"
LIST_HEADER = "\n\nHere are the latest contents of your todo list:"
NEEDS_CONTENT = "Invalid argument: must provide 'content' for new todos items"

MERGE_DESCRIPTION = (
    "Whether to merge the todos with the existing todos. If true, the todos will be merged into the existing "
    "todos based on the id field. You can leave unchanged properties undefined. If false, the new todos will "
    "replace the existing todos."
)


def fits(tool: str, args: Any) -> bool:
    """`todo_write` is shared (see ROUTES): Cursor's calls are the ones with `merge`."""
    return isinstance(args, dict) and "merge" in args


def call(tool: str, args: Any, current: list[Item], *, raw: str | None = None, next_id: int = 1) -> Outcome:
    merge, todos = parse(args)
    existing = {item.id: item for item in current if item.id is not None}
    # createTodoItem: an empty or missing content falls back to the id's old content.
    incoming = [
        Item(id=todo["id"], content=todo.get("content") or content_of(existing.get(todo["id"])), status=todo["status"])
        for todo in todos
    ]
    if merge:
        state = merged(existing, incoming)
        touched = {item.id for item in incoming}
    else:
        state = incoming
        touched = {item.id for item in state}
    kept, removed = prune_finished(state, touched)
    reply = success_reply(kept, show_list=merge)
    return Outcome(native=reply, items=kept, removed=removed, patched=merge)


def content_of(item: Item | None) -> str:
    return item.content if item is not None else ""


def merged(existing: dict[str, Item], incoming: list[Item]) -> list[Item]:
    """The merge loop: a Map from id, seeded with the list, updated in call order."""
    by_id = dict(existing)
    for todo in incoming:
        assert todo.id is not None  # read() gave every incoming step its id
        before = by_id.get(todo.id)
        if (before is None or before.content == "") and todo.content == "":
            raise InvalidInput(NEEDS_CONTENT, details={"id": todo.id})
        by_id[todo.id] = todo
    return list(by_id.values())


def prune_finished(state: list[Item], touched: set[str | None]) -> tuple[list[Item], list[str]]:
    """pruneFinishedTodos: keep the MAX_FINISHED_TODOS most recent finished steps."""
    finished = [index for index, item in enumerate(state) if item.status in FINISHED]
    if len(finished) <= MAX_FINISHED_TODOS:
        return state, []
    by_recency = sorted(finished, key=lambda index: (state[index].id in touched, index), reverse=True)
    pruned = set(by_recency[MAX_FINISHED_TODOS:])
    kept = [item for index, item in enumerate(state) if index not in pruned]
    return kept, [step_id for index in sorted(pruned) if (step_id := state[index].id) is not None]


def success_reply(todos: list[Item], *, show_list: bool) -> str:
    message = SUCCESS
    if any(item.status == "pending" for item in todos) and all(item.status != "in_progress" for item in todos):
        message += NONE_IN_PROGRESS
    if sum(item.status in FINISHED for item in todos) > CLEANUP_THRESHOLD:
        message += CLEANUP
    if show_list:
        listed = [{"id": item.id, "content": item.content, "status": item.status} for item in todos]
        message += f"{LIST_HEADER}\n{compact_json(listed)}"
    return message


# --- zod, for this schema -------------------------------------------------------------


def parse(args: Any) -> tuple[bool, list[dict[str, str]]]:
    """`todoToolSchemaForParsing.safeParse`: the data, or every issue zod finds."""
    if not isinstance(args, dict):
        # The discriminated union's own object check (its keys in its own order).
        raise zod_error(
            [{"code": "invalid_type", "expected": "object", "path": [], "message": expected("object", args)}]
        )
    merge = lenient_boolean(args["merge"]) if "merge" in args else True
    if merge is not True and merge is not False:
        raise zod_error(
            [
                {
                    "code": "invalid_union",
                    "errors": [],
                    "note": "No matching discriminator",
                    "discriminator": "merge",
                    "options": [True, False],
                    "path": ["merge"],
                    "message": "Invalid discriminator value. Expected 'true' | 'false'",
                }
            ]
        )
    todos = lenient_array(args.get("todos", MISSING))
    if not isinstance(todos, list):
        raise zod_error([type_issue("array", todos, ["todos"])])
    issues: list[dict[str, Any]] = []
    parsed = []
    for index, todo in enumerate(todos):
        item = parse_item(todo, ["todos", index], content_required=not merge, issues=issues)
        if item is not None:
            parsed.append(item)
    if issues:
        raise zod_error(issues)
    return merge, parsed


MISSING: Any = type("Missing", (), {"__repr__": lambda self: "MISSING"})()


def parse_item(todo: Any, path: list[Any], *, content_required: bool, issues: list[dict[str, Any]]) -> dict | None:
    if not isinstance(todo, dict):
        issues.append(type_issue("object", todo, path))
        return None
    before = len(issues)
    step_id = todo.get("id", MISSING)
    if not isinstance(step_id, str):
        issues.append(type_issue("string", step_id, [*path, "id"]))
    content = todo.get("content", MISSING)
    if not isinstance(content, str) and (content_required or content is not MISSING):
        issues.append(type_issue("string", content, [*path, "content"]))
    status = lenient_status(todo.get("status", MISSING))
    if status not in STATUSES:
        issues.append(
            {
                "code": "invalid_value",
                "values": list(STATUSES),
                "path": [*path, "status"],
                "message": "Invalid option: expected one of " + "|".join(f'"{s}"' for s in STATUSES),
            }
        )
    if len(issues) > before:
        return None
    item = {"id": step_id, "status": status}
    if content is not MISSING:
        item["content"] = content
    return item


def lenient_boolean(value: Any) -> Any:
    return {"true": True, "false": False}.get(value, value) if isinstance(value, str) else value


def lenient_status(value: Any) -> Any:
    """lenientEnum: a string matching one status without regard to case becomes it."""
    if not isinstance(value, str) or value in STATUSES:
        return value
    matches = [status for status in STATUSES if status.lower() == value.lower()]
    return matches[0] if len(matches) == 1 else value


def lenient_array(value: Any) -> Any:
    """lenientArray: a string that is a JSON list (with nothing but `,]}` after it) is the list."""
    if not isinstance(value, str) or not value.strip():
        return value
    text = value.strip()
    try:
        decoded = json.loads(text, object_pairs_hook=no_repeated_keys)
    except (ValueError, RecursionError):
        decoded = leading_list(text)
    return decoded if isinstance(decoded, list) else value


def leading_list(text: str) -> Any:
    if not text.startswith("["):
        return None
    try:
        decoded, end = json.JSONDecoder(object_pairs_hook=no_repeated_keys).raw_decode(text)
    except (ValueError, RecursionError):
        return None
    rest = text[end:]
    return decoded if isinstance(decoded, list) and not rest.strip(" \t\n\r,]}") else None


def no_repeated_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # The repair refuses text that names a key twice.
    keys = [key for key, _ in pairs]
    if len(set(keys)) != len(keys):
        raise ValueError("a key is named twice")
    return dict(pairs)


def type_issue(expected_type: str, value: Any, path: list[Any]) -> dict[str, Any]:
    return {"expected": expected_type, "code": "invalid_type", "path": path, "message": expected(expected_type, value)}


def expected(expected_type: str, value: Any) -> str:
    return f"Invalid input: expected {expected_type}, received {received(value)}"


def received(value: Any) -> str:
    """zod 4's name for a parsed JSON value's type."""
    if value is MISSING:
        return "undefined"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "NaN" if value != value else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def zod_error(issues: list[dict[str, Any]]) -> InvalidInput:
    """`Invalid arguments: ${error.message}`: zod's message is its issues as indented JSON."""
    shown = issues[:MAX_REPORTED_ERRORS]
    text = json.dumps(shown, ensure_ascii=False, indent=2)
    if len(issues) > MAX_REPORTED_ERRORS:
        text += f"\n… and {len(issues) - MAX_REPORTED_ERRORS} more issues"
    return InvalidInput(
        f"Invalid arguments: {text}",
        details={"issues": [{"path": i["path"], "code": i["code"]} for i in shown], "count": len(issues)},
    )


def definitions() -> list[ToolDefinition]:
    # The `dsv3-1018` model schema (merge first, content optional): what the parser
    # reads. Unknown keys are dropped, not refused, so no additionalProperties.
    item = {
        "type": "object",
        "properties": {
            "content": {"type": "string", "description": "The description/content of the todo item"},
            "status": {"type": "string", "enum": list(STATUSES), "description": "The current status of the todo item"},
            "id": {"type": "string", "description": "Unique identifier for the todo item"},
        },
        "required": ["status", "id"],
    }
    schema = {
        "type": "object",
        "properties": {
            "merge": {"type": "boolean", "description": MERGE_DESCRIPTION},
            "todos": {"type": "array", "items": item, "description": "Array of todo items to write to the workspace"},
        },
        "required": ["merge", "todos"],
    }
    return [ToolDefinition(name="todo_write", description=describe(NAME, "todo_write"), input_schema=schema)]
