"""JSON in: strict parsing, and refusing what no database can store or no call needs.

Every JSON todoweb keeps passes `parse` first, so that what reaches the database is
storable by construction: no NaN or Infinity (a number like `1e400` overflows a
double and would parse as infinity), no nesting deeper than `MAX_DEPTH` (the
encoders recurse, and SQLite's JSON functions stop at 1,000 levels), no NUL
characters and no lone surrogates (neither PostgreSQL nor UTF-8 text holds them).
No list or object holds more than `MAX_LIST_ITEMS` elements, so that the work a
call causes stays small and linear (a session holds at most 500 steps).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import orjson

from todoweb.calls.errors import InvalidInput, InvalidJson

# Far deeper than any todo list (a tool call is 4-5 levels), far shallower than
# anything that strains a recursive encoder.
MAX_DEPTH = 64
TOO_DEEP = f"nested more than {MAX_DEPTH} levels deep"
MAX_LIST_ITEMS = 1000

# A JSON string or number token; strings are matched so that digits inside them are skipped.
TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?')


class JsonError(ValueError):
    """Text that is not JSON todoweb accepts (400 `invalid_json`). `reason` is the
    parser's own words, for dialects that quote them."""

    def __init__(self, what: str, reason: str):
        super().__init__(f"{what} is not valid JSON: {reason}")
        self.reason = reason


class UnacceptableJson(ValueError):
    """Valid JSON that todoweb does not take: text no database stores, a list past
    MAX_LIST_ITEMS (422 `invalid_input`)."""


def loads(text: bytes | str, *, what: str) -> Any:
    """A request body: parsed and checked, or the API's 400/422."""
    try:
        return parse(text, what=what)
    except JsonError as exc:
        raise InvalidJson(str(exc)) from None
    except UnacceptableJson as exc:
        raise InvalidInput(str(exc)) from None


def parse(text: bytes | str, *, what: str, strict: bool = True) -> Any:
    """Parse JSON text, refusing JSON's extensions, overflowing numbers, deep nesting
    and text no database stores. `strict=False` lets control characters into strings
    (as some agents' own parsers do)."""
    if strict and isinstance(text, bytes):
        value = parse_plain(text)
        if value is not NOT_PLAIN:
            return value
    text = decode(text, what=what)
    value = load(text, what=what, strict=strict)
    check(value, text=text, what=what)
    return value


# What `parse_plain` leaves to the full parse.
NOT_PLAIN = object()
# An integer of 19 digits or more may be beyond 64 bits, which orjson reads as a float.
# Found by turning every digit into "0" and looking for 19 zeros in a row: two passes
# in C, ten times faster than a regular expression over a 2 KB body.
DIGITS_AS_ZEROS = bytes.maketrans(b"123456789", b"000000000")
LONG_DIGITS = b"0" * 19


def parse_plain(text: bytes) -> Any:
    """`parse` for the usual body, some ten times faster: orjson's parse, which refuses
    everything `parse` refuses but NUL characters, deep nesting, long lists and
    integers beyond 64 bits (it reads those as floats); a body that may hold any of
    these is left to `parse` (NOT_PLAIN), as is a body orjson refuses, so that the
    error says what `parse` says."""
    if b"\\u0000" in text or LONG_DIGITS in text.translate(DIGITS_AS_ZEROS):
        return NOT_PLAIN
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return NOT_PLAIN
    # Fewer brackets than the depth limit, or commas than the list limit: within both.
    if text.count(b"[") + text.count(b"{") >= MAX_DEPTH or text.count(b",") >= MAX_LIST_ITEMS:
        if not containers_within_limits(value):
            return NOT_PLAIN
    return value


def containers_within_limits(value: Any) -> bool:
    """Whether no list or object is nested past MAX_DEPTH or holds more than
    MAX_LIST_ITEMS elements (its text needs no look: orjson has checked it)."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if depth >= MAX_DEPTH or len(item) > MAX_LIST_ITEMS:
            return False
        children = item.values() if isinstance(item, dict) else item
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return True


def decode(text: bytes | str, *, what: str) -> str:
    if isinstance(text, bytes):
        try:
            return text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise JsonError(what, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    return text


def load(text: str, *, what: str, strict: bool = True) -> Any:
    """The JSON syntax alone, without `check`: for callers that check the parts of a
    message apart (the MCP server answers a bad envelope and bad tool arguments
    differently)."""
    try:
        return json.loads(text, parse_constant=reject_constant, strict=strict)
    except RecursionError:
        raise JsonError(what, TOO_DEEP) from None
    except ValueError as exc:
        raise JsonError(what, str(exc)) from None


def reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not allowed in JSON")


def check(value: Any, *, text: str | None = None, what: str = "The input") -> None:
    """Refuse what no database can store, in one walk over the value."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            check_text(item)
        elif isinstance(item, float):
            if not math.isfinite(item):
                raise JsonError(what, overflow_message(text))
        elif isinstance(item, (dict, list)):
            if depth >= MAX_DEPTH:
                raise JsonError(what, TOO_DEEP)
            if len(item) > MAX_LIST_ITEMS:
                kind = "fields in one object" if isinstance(item, dict) else "items in one list"
                raise UnacceptableJson(
                    f"Too many {kind}: {len(item):,}. todoweb takes at most {MAX_LIST_ITEMS:,} in any list "
                    "or object of a call (a fixed limit, whatever the project's max_items policy allows)"
                )
            children = [*item.keys(), *item.values()] if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)


def check_text(text: str) -> None:
    if "\x00" in text:
        raise UnacceptableJson("Text may not contain the NUL character (\\u0000)")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise UnacceptableJson("Text contains invalid Unicode (a lone surrogate)") from None


def overflow_message(text: str | None) -> str:
    """Where the first number too large for a double is, as json's own errors say it."""
    text = text or ""
    for match in TOKEN.finditer(text):
        token = match.group()
        if token[0] != '"' and math.isinf(float(token)):
            line = text.count("\n", 0, match.start()) + 1
            column = match.start() - text.rfind("\n", 0, match.start())
            return f"number {token[:40]} is out of range: line {line} column {column} (char {match.start()})"
    return "a number is out of range"


# Sentinel for `args` when the arguments text of a call is not valid JSON.
UNPARSED: Any = type("Unparsed", (), {"__repr__": lambda self: "UNPARSED"})()


# Made once: json.dumps makes an encoder on each call with options of its own.
COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def compact_json(value: Any) -> str:
    """JSON as JavaScript's JSON.stringify writes it (no spaces, raw Unicode), in the
    json module's words (a call's fingerprint, stored, is of this text). orjson writes
    the same text 15 times faster for strings, integers, booleans and null in lists and
    objects; anything else (a float: 1e+16 in json's words, 1e16 in orjson's), and
    what orjson refuses (an integer beyond 64 bits, a lone surrogate) goes to json."""
    if orjson_writes_as_json(value):
        try:
            return orjson.dumps(value).decode()
        except orjson.JSONEncodeError:
            pass
    return COMPACT.encode(value)


def orjson_writes_as_json(value: Any) -> bool:
    """Whether this value holds nothing but what orjson writes as json does."""
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is str or kind is int or kind is bool or item is None:
            continue
        if kind is dict:
            stack.extend(item.values())
        elif kind is list or kind is tuple:
            stack.extend(item)
        else:
            return False
    return True


def json_error(raw: str) -> str:
    """Why Python's json module refuses the arguments text, in its words."""
    try:
        json.loads(raw)
    except (ValueError, RecursionError) as exc:
        return str(exc)
    return "not a JSON value"
