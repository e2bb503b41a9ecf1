"""The dialect registry: every module of this package but `base` and the private
helpers (`_*.py`) is one tool format.

Adding a dialect is adding one module (see `base` for its interface) and its tests.
"""

from __future__ import annotations

import difflib
import importlib
import pkgutil
from functools import cache
from typing import Any, cast

from todoweb.calls.errors import InvalidInput, TodowebError, UnknownTool
from todoweb.dialects.base import Dialect, SharedName

# How alike an unknown tool name must be to a known one to be suggested (a typo).
CLOSE_NAME = 0.8


@cache
def dialects() -> dict[str, Dialect]:
    found = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        if info.name == "base" or info.name.startswith("_"):
            continue
        module = cast(Dialect, importlib.import_module(f"{__name__}.{info.name}"))
        found[module.NAME] = module
    return found


# Where several dialects share a tool name, the order their `fits` is asked in: each
# recognises its own input by its fields, and the first that does takes the call.
ROUTES = {
    # WeKnora {steps}; Cursor {merge, todos}; Goose {content: markdown};
    # Amp items with priority or todo/in-progress; Qwen Code any other {todos}.
    "todo_write": ("weknora", "cursor", "goose", "amp", "qwen"),
    # Gemini CLI items with description; LangChain/deepagents items with content.
    "write_todos": ("gemini", "langchain"),
}


@cache
def tool_names() -> dict[str, tuple[Dialect, ...]]:
    """Each tool name's dialects, in routing order."""
    by_tool: dict[str, list[Dialect]] = {}
    for module in dialects().values():
        for tool in module.TOOLS:
            by_tool.setdefault(tool, []).append(module)
    for tool, modules in by_tool.items():
        order = ROUTES.get(tool, ())
        modules.sort(key=lambda m: order.index(m.NAME) if m.NAME in order else len(order))
    return {tool: tuple(modules) for tool, modules in by_tool.items()}


def resolve(tool: str, args: Any, dialect: str | None = None) -> Dialect:
    """The dialect for a call: the one named by `dialect` (forced), else by tool name,
    and by the input's fields where names are shared."""
    candidates = tool_names().get(tool)
    if not candidates:
        closest = difflib.get_close_matches(tool, tool_names(), n=1, cutoff=CLOSE_NAME)
        raise UnknownTool(tool, closest=closest[0] if closest else None)
    if dialect is not None:
        return forced(tool, dialect, candidates)
    if len(candidates) == 1:
        return candidates[0]
    for module in candidates:
        if cast(SharedName, module).fits(tool, args):
            return module
    expected = "; ".join(f"{m.NAME}: {m.SHAPE}" for m in candidates)
    raise InvalidInput(
        f"Input for '{tool}' fits no known format. Expected one of: {expected}",
        details={"tool": tool, "dialects": [m.NAME for m in candidates]},
    )


def forced(tool: str, dialect: str, candidates: tuple[Dialect, ...]) -> Dialect:
    if dialect not in dialects():
        raise InvalidInput(f"Unknown dialect '{dialect}'. Known: {', '.join(dialects())}", details={"dialect": dialect})
    for module in candidates:
        if module.NAME == dialect:
            return module
    raise InvalidInput(
        f"Dialect '{dialect}' has no tool '{tool}'. It has: {', '.join(dialects()[dialect].TOOLS)}",
        details={"dialect": dialect, "tool": tool},
    )


def look_alike(tool: str) -> list[str]:
    """Other tool names that differ from `tool` only in case (opencode's `todowrite`,
    Claude Code's `TodoWrite`): a model that mixes them up gets one tool's rules for
    the other's input."""
    folded = tool.casefold()
    return [name for name in tool_names() if name != tool and name.casefold() == folded]


def look_alike_hint(tool: str, args: Any, current: list[Any], next_id: int) -> str | None:
    """Why a refused call may have named the wrong tool: its input is a plan for a
    tool whose name differs only in case."""
    for name in look_alike(tool):
        try:
            other = resolve(name, args)
            if other.call(name, args, current, next_id=next_id).items is None:
                continue  # a read: anything fits one
        except TodowebError:
            continue
        return f"This input fits the tool '{name}' ({other.NAME}), not '{tool}': check the tool's name."
    return None
