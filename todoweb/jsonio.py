"""JSON in: strict parsing, and refusing text that no database can store."""

from __future__ import annotations

import json
from typing import Any

from .errors import ApiError


def loads(text: bytes | str, *, what: str) -> Any:
    try:
        value = json.loads(text, parse_constant=reject_constant)
    except RecursionError:
        raise ApiError(400, "invalid_json", f"{what} is nested too deeply") from None
    except ValueError as exc:
        raise ApiError(400, "invalid_json", f"{what} is not valid JSON: {exc}") from None
    check_text(value)
    return value


def reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not allowed in JSON")


def check_text(value: Any) -> None:
    """Refuse text no database can store: NUL characters and lone surrogates."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if "\x00" in item:
                raise ApiError(422, "invalid_input", "Text may not contain the NUL character (\\u0000)")
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                raise ApiError(422, "invalid_input", "Text contains invalid Unicode (a lone surrogate)") from None
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
