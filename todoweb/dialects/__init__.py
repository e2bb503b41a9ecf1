"""The dialect registry: every module of this package but `base` and the private
helpers (`_*.py`) is one tool format.

Adding a dialect is adding one module (see `base` for its interface) and its tests.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache
from types import ModuleType
from typing import Any

from ..errors import InvalidInput, UnknownTool


@cache
def dialects() -> dict[str, ModuleType]:
    found = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        if info.name == "base" or info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        found[module.NAME] = module
    return found


@cache
def tool_names() -> dict[str, tuple[ModuleType, ...]]:
    by_tool: dict[str, list[ModuleType]] = {}
    for module in dialects().values():
        for tool in module.TOOLS:
            by_tool.setdefault(tool, []).append(module)
    return {tool: tuple(modules) for tool, modules in by_tool.items()}


def resolve(tool: str, args: Any) -> ModuleType:
    """The dialect for a call: by tool name, and by the input's fields where names are shared."""
    candidates = tool_names().get(tool)
    if not candidates:
        raise UnknownTool(tool)
    if len(candidates) == 1:
        return candidates[0]
    for module in candidates:
        if module.fits(tool, args):
            return module
    expected = "; ".join(f"{m.NAME}: {m.SHAPE}" for m in candidates)
    raise InvalidInput(
        f"Input for '{tool}' fits no known format. Expected one of: {expected}",
        details={"tool": tool, "dialects": [m.NAME for m in candidates]},
    )
