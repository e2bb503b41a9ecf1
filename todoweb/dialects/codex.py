"""Codex's `update_plan`, as codex-rs parses it: `serde_json::from_str::<UpdatePlanArgs>`.

serde reads the arguments text as a stream and stops at the first problem, so the
error that wins is the first one *in the text*, worded by serde and placed by it
(`{"plan":[{"step":"a","status":"pending","priority":"high"}]}` gives "failed to parse
function arguments: unknown field `priority`, expected `step` or `status` at line 1
column 50"). Python's json module cannot say that (it builds the
whole value first and forgets where things were), so this module carries a small
port of the parts of serde_json's deserializer that `UpdatePlanArgs` exercises:

    #[serde(deny_unknown_fields)] struct UpdatePlanArgs { #[serde(default)] explanation: Option<String>, plan: Vec<PlanItemArg> }
    #[serde(deny_unknown_fields)] struct PlanItemArg { step: String, status: StepStatus }
    #[serde(rename_all = "snake_case")] enum StepStatus { Pending, InProgress, Completed }

Positions are serde's: lines count `\\n`, columns count UTF-8 *bytes* since the line
start. An error found while looking at a character is placed on that character
(1-based); an error found after reading a token is placed on its last byte; serde's
"custom" errors (unknown or missing field, invalid type, unknown variant) take the
position where the parser stood when the error reached the enclosing value, which is
why `missing field` points at the object's closing brace.

Quirks kept because serde has them: a struct may also be written as an array
(`["step", "pending"]`), duplicate keys are errors, and more than one `in_progress`
step is accepted (the "at most one" rule is only in the tool description; the
project policy decides).
"""

from __future__ import annotations

import re
import unicodedata
from decimal import Decimal
from typing import Any

from .base import UNPARSED, InvalidInput, Item, Outcome, ToolDefinition, compact_json, describe

NAME = "codex"
TOOLS = ("update_plan",)
SHAPE = "{explanation?, plan: [{step, status}]}"
HANDLES_RAW = True

STATUSES = ("pending", "in_progress", "completed")
ARGS_FIELDS = ("explanation", "plan")
ITEM_FIELDS = ("step", "status")
PREFIX = "failed to parse function arguments: "
UPDATED = "Plan updated"

WHITESPACE = b" \n\t\r"
# Where a string's plain run of bytes ends: its closing quote, an escape, or a control character.
STRING_STOP = re.compile(rb'["\\\x00-\x1f]')
ESCAPES = {ord('"'): '"', ord("\\"): "\\", ord("/"): "/", ord("b"): "\b", ord("f"): "\f"}
ESCAPES |= {ord("n"): "\n", ord("r"): "\r", ord("t"): "\t"}
HEX = frozenset(b"0123456789abcdefABCDEF")
MISSING: Any = object()


def fits(tool: str, args: Any) -> bool:
    return True


def call(tool: str, args: Any, current: list[Item], *, raw: str | None = None, next_id: int = 1) -> Outcome:
    # The model's own text where there is one (OpenAI forms); otherwise the input as
    # compact JSON, the form a model would most likely have written it in.
    text = raw if raw is not None else compact_json(args)
    try:
        explanation, plan = Parser(text).update_plan_args()
    except SerdeError as exc:
        # Text that is not JSON at all is the envelope's 400; a well-formed call that
        # breaks the struct's rules is a 422, like every other dialect's refusal.
        raise InvalidInput(
            PREFIX + str(exc),
            code="invalid_json" if args is UNPARSED else "invalid_input",
            details={"line": exc.line, "column": exc.column},
        ) from None
    items = [Item(content=step, status=status) for step, status in plan]
    title = explanation if explanation and explanation.strip() else None
    return Outcome(native=UPDATED, items=items, title=title)


class SerdeError(Exception):
    """serde_json's error: a message and, once known, a 1-based line and a column (0 = not placed yet)."""

    def __init__(self, message: str, line: int = 0, column: int = 0):
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column

    def __str__(self) -> str:
        if self.line == 0:
            return self.message
        return f"{self.message} at line {self.line} column {self.column}"


class Parser:
    """serde_json's `Deserializer<StrRead>`, reduced to what `UpdatePlanArgs` needs.

    Method names follow serde_json's so the port can be checked against it.
    """

    def __init__(self, text: str):
        # serde works on the UTF-8 bytes; "surrogatepass" keeps a stray surrogate
        # from crashing the port (a Rust &str cannot hold one; such text is refused anyway).
        self.data = text.encode("utf-8", "surrogatepass")
        self.index = 0

    # -- positions and errors -------------------------------------------------

    def position_of_index(self, i: int) -> tuple[int, int]:
        start_of_line = self.data.rfind(b"\n", 0, i) + 1
        return self.data.count(b"\n", 0, start_of_line) + 1, i - start_of_line

    def error(self, message: str) -> SerdeError:
        """An error placed where the parser stands (after what it consumed)."""
        return SerdeError(message, *self.position_of_index(self.index))

    def peek_error(self, message: str) -> SerdeError:
        """An error placed on the character being looked at."""
        return SerdeError(message, *self.position_of_index(min(len(self.data), self.index + 1)))

    def fix_position(self, err: SerdeError) -> SerdeError:
        if err.line == 0:
            return self.error(err.message)
        return err

    # -- bytes ------------------------------------------------------------------

    def peek(self) -> int | None:
        return self.data[self.index] if self.index < len(self.data) else None

    def peek_or_null(self) -> int:
        return self.data[self.index] if self.index < len(self.data) else 0

    def eat_char(self) -> None:
        self.index += 1

    def next_char(self) -> int | None:
        byte = self.peek()
        if byte is not None:
            self.index += 1
        return byte

    def parse_whitespace(self) -> int | None:
        while (byte := self.peek()) is not None and byte in WHITESPACE:
            self.index += 1
        return byte

    def parse_ident(self, ident: bytes) -> None:
        for expected in ident:
            byte = self.next_char()
            if byte is None:
                raise self.error("EOF while parsing a value")
            if byte != expected:
                raise self.error("expected ident")

    # -- the two structs --------------------------------------------------------

    def update_plan_args(self) -> tuple[str | None, list[tuple[str, str]]]:
        """`serde_json::from_str`: the value, then nothing but whitespace."""
        value = self.deserialize_struct("struct UpdatePlanArgs", self.args_from_map, self.args_from_seq)
        if self.parse_whitespace() is not None:
            raise self.peek_error("trailing characters")
        return value

    def args_from_map(self) -> tuple[str | None, list[tuple[str, str]]]:
        explanation: Any = MISSING
        plan: Any = MISSING
        for key in self.map_keys(ARGS_FIELDS):
            if key == "explanation":
                if explanation is not MISSING:
                    raise SerdeError("duplicate field `explanation`")
                self.parse_object_colon()
                explanation = self.deserialize_option_string()
            else:
                if plan is not MISSING:
                    raise SerdeError("duplicate field `plan`")
                self.parse_object_colon()
                plan = self.deserialize_plan()
        if plan is MISSING:
            raise SerdeError("missing field `plan`")
        return (None if explanation is MISSING else explanation), plan

    def args_from_seq(self) -> tuple[str | None, list[tuple[str, str]]]:
        expecting = "struct UpdatePlanArgs with 2 elements"
        first = [True]
        explanation = None  # #[serde(default)]: a missing element is None, not an error
        if self.next_element(first):
            explanation = self.deserialize_option_string()
        if not self.next_element(first):
            raise SerdeError(f"invalid length 1, expected {expecting}")
        return explanation, self.deserialize_plan()

    def plan_item_from_map(self) -> tuple[str, str]:
        step: Any = MISSING
        status: Any = MISSING
        for key in self.map_keys(ITEM_FIELDS):
            if key == "step":
                if step is not MISSING:
                    raise SerdeError("duplicate field `step`")
                self.parse_object_colon()
                step = self.deserialize_string("a string")
            else:
                if status is not MISSING:
                    raise SerdeError("duplicate field `status`")
                self.parse_object_colon()
                status = self.deserialize_status()
        # The derived code checks the fields in declaration order.
        if step is MISSING:
            raise SerdeError("missing field `step`")
        if status is MISSING:
            raise SerdeError("missing field `status`")
        return step, status

    def plan_item_from_seq(self) -> tuple[str, str]:
        expecting = "struct PlanItemArg with 2 elements"
        first = [True]
        if not self.next_element(first):
            raise SerdeError(f"invalid length 0, expected {expecting}")
        step = self.deserialize_string("a string")
        if not self.next_element(first):
            raise SerdeError(f"invalid length 1, expected {expecting}")
        return step, self.deserialize_status()

    def deserialize_plan(self) -> list[tuple[str, str]]:
        """`Vec<PlanItemArg>`: deserialize_seq with the Vec visitor."""
        peek = self.parse_whitespace()
        if peek is None:
            raise self.peek_error("EOF while parsing a value")
        if peek != ord("["):
            raise self.peek_invalid_type("a sequence")
        self.eat_char()
        items: list[tuple[str, str]] = []
        first = [True]
        try:
            while self.next_element(first):
                items.append(
                    self.deserialize_struct("struct PlanItemArg", self.plan_item_from_map, self.plan_item_from_seq)
                )
        except SerdeError as exc:
            self.end_seq(quiet=True)
            raise self.fix_position(exc) from None
        self.end_seq()
        return items

    # -- serde_json's generic pieces --------------------------------------------

    def deserialize_struct(self, expecting: str, from_map: Any, from_seq: Any) -> Any:
        peek = self.parse_whitespace()
        if peek is None:
            raise self.peek_error("EOF while parsing a value")
        if peek == ord("{"):
            visit, end = from_map, self.end_map
        elif peek == ord("["):
            visit, end = from_seq, self.end_seq
        else:
            raise self.peek_invalid_type(expecting)
        self.eat_char()
        try:
            value = visit()
        except SerdeError as exc:
            # serde_json still runs end_map/end_seq after a failed visit (and ignores
            # its result): it may skip whitespace and eat the closing bracket, which
            # moves where a not-yet-placed error lands.
            end(quiet=True)
            raise self.fix_position(exc) from None
        try:
            end()
        except SerdeError as exc:
            raise self.fix_position(exc) from None
        return value

    def map_keys(self, fields: tuple[str, ...]) -> Any:
        """MapAccess::next_key with the derived field identifier (deny_unknown_fields)."""
        first = True
        while True:
            peek = self.parse_whitespace()
            if peek == ord("}"):
                return
            if peek == ord(",") and not first:
                self.eat_char()
                peek = self.parse_whitespace()
            elif peek is None:
                raise self.peek_error("EOF while parsing an object")
            elif not first:
                raise self.peek_error("expected `,` or `}`")
            first = False
            if peek == ord('"'):
                self.eat_char()
                key = self.parse_str()
            elif peek == ord("}"):
                raise self.peek_error("trailing comma")
            elif peek is not None:
                raise self.peek_error("key must be a string")
            else:
                raise self.peek_error("EOF while parsing a value")
            if key not in fields:
                raise SerdeError(f"unknown field `{key}`, expected {one_of(fields)}")
            yield key

    def next_element(self, first: list[bool]) -> bool:
        """SeqAccess::next_element: is there another element? (`first` is the access's flag.)"""
        peek = self.parse_whitespace()
        if peek == ord("]"):
            return False
        if peek == ord(",") and not first[0]:
            self.eat_char()
            peek = self.parse_whitespace()
        elif peek is None:
            raise self.peek_error("EOF while parsing a list")
        elif first[0]:
            first[0] = False
        else:
            raise self.peek_error("expected `,` or `]`")
        if peek == ord("]"):
            raise self.peek_error("trailing comma")
        if peek is None:
            raise self.peek_error("EOF while parsing a value")
        return True

    def end_map(self, *, quiet: bool = False) -> None:
        peek = self.parse_whitespace()
        if peek == ord("}"):
            self.eat_char()
            return
        if quiet:
            return
        if peek == ord(","):
            raise self.peek_error("trailing comma")
        if peek is not None:
            raise self.peek_error("trailing characters")
        raise self.peek_error("EOF while parsing an object")

    def end_seq(self, *, quiet: bool = False) -> None:
        peek = self.parse_whitespace()
        if peek == ord("]"):
            self.eat_char()
            return
        if peek == ord(","):
            self.eat_char()
            error = "trailing comma" if self.parse_whitespace() == ord("]") else "trailing characters"
        else:
            error = "trailing characters" if peek is not None else "EOF while parsing a list"
        if not quiet:
            raise self.peek_error(error)

    def parse_object_colon(self) -> None:
        peek = self.parse_whitespace()
        if peek == ord(":"):
            self.eat_char()
        elif peek is not None:
            raise self.peek_error("expected `:`")
        else:
            raise self.peek_error("EOF while parsing an object")

    def deserialize_option_string(self) -> str | None:
        if self.parse_whitespace() == ord("n"):
            self.eat_char()
            self.parse_ident(b"ull")
            return None
        return self.deserialize_string("a string")

    def deserialize_string(self, expecting: str) -> str:
        peek = self.parse_whitespace()
        if peek is None:
            raise self.peek_error("EOF while parsing a value")
        if peek != ord('"'):
            raise self.peek_invalid_type(expecting)
        self.eat_char()
        return self.parse_str()

    def deserialize_status(self) -> str:
        """deserialize_enum for StepStatus: `"pending"`, or serde's map form `{"pending": null}`."""
        peek = self.parse_whitespace()
        if peek == ord('"'):
            return self.variant_identifier()
        if peek != ord("{"):
            raise self.peek_error("expected value" if peek is not None else "EOF while parsing a value")
        self.eat_char()
        variant = self.variant_identifier()
        self.parse_object_colon()
        self.deserialize_unit()
        peek = self.parse_whitespace()
        if peek == ord("}"):
            self.eat_char()
            return variant
        raise self.error("expected value" if peek is not None else "EOF while parsing an object")

    def variant_identifier(self) -> str:
        variant = self.deserialize_string("variant identifier")
        if variant not in STATUSES:
            # Placed right after the string's closing quote (deserialize_str's fix_position).
            raise self.error(f"unknown variant `{variant}`, expected {one_of(STATUSES)}")
        return variant

    def deserialize_unit(self) -> None:
        peek = self.parse_whitespace()
        if peek is None:
            raise self.peek_error("EOF while parsing a value")
        if peek != ord("n"):
            raise self.peek_invalid_type("unit")
        self.eat_char()
        self.parse_ident(b"ull")

    def peek_invalid_type(self, expecting: str) -> SerdeError:
        """`invalid type: <what is there>, expected <what the visitor wanted>`, after reading a scalar."""
        peek = self.peek_or_null()
        if peek == ord("n"):
            self.eat_char()
            self.parse_ident(b"ull")
            unexpected = "null"
        elif peek == ord("t"):
            self.eat_char()
            self.parse_ident(b"rue")
            unexpected = "boolean `true`"
        elif peek == ord("f"):
            self.eat_char()
            self.parse_ident(b"alse")
            unexpected = "boolean `false`"
        elif peek == ord("-"):
            self.eat_char()
            unexpected = self.parse_any_number(positive=False)
        elif ord("0") <= peek <= ord("9"):
            unexpected = self.parse_any_number(positive=True)
        elif peek == ord('"'):
            self.eat_char()
            unexpected = f"string {rust_debug(self.parse_str())}"
        elif peek == ord("["):
            unexpected = "sequence"
        elif peek == ord("{"):
            unexpected = "map"
        else:
            return self.peek_error("expected value")
        return self.error(f"invalid type: {unexpected}, expected {expecting}")

    # -- scalars ---------------------------------------------------------------

    def parse_str(self) -> str:
        """The rest of a string whose opening quote was eaten."""
        out = bytearray()
        while True:
            stop = STRING_STOP.search(self.data, self.index)
            if stop is None:
                self.index = len(self.data)
                raise self.error("EOF while parsing a string")
            out += self.data[self.index : stop.start()]
            self.index = stop.start() + 1
            byte = self.data[stop.start()]
            if byte == ord('"'):
                return out.decode("utf-8", "surrogatepass")
            if byte != ord("\\"):
                raise self.error("control character (\\u0000-\\u001F) found while parsing a string")
            self.parse_escape(out)

    def parse_escape(self, out: bytearray) -> None:
        byte = self.next_char()
        if byte is None:
            raise self.error("EOF while parsing a string")
        if byte in ESCAPES:
            out += ESCAPES[byte].encode()
        elif byte == ord("u"):
            self.parse_unicode_escape(out)
        else:
            raise self.error("invalid escape")

    def parse_unicode_escape(self, out: bytearray) -> None:
        n = self.decode_hex_escape()
        if 0xDC00 <= n <= 0xDFFF:
            raise self.error("lone leading surrogate in hex escape")
        if not 0xD800 <= n <= 0xDBFF:
            out += chr(n).encode()
            return
        for expected in b"\\u":
            byte = self.peek()
            if byte is None:
                raise self.error("EOF while parsing a string")
            self.eat_char()
            if byte != expected:
                raise self.error("unexpected end of hex escape")
        n2 = self.decode_hex_escape()
        if not 0xDC00 <= n2 <= 0xDFFF:
            raise self.error("lone leading surrogate in hex escape")
        out += chr((((n - 0xD800) << 10) | (n2 - 0xDC00)) + 0x10000).encode()

    def decode_hex_escape(self) -> int:
        digits = self.data[self.index : self.index + 4]
        if len(digits) < 4:
            self.index = len(self.data)
            raise self.error("EOF while parsing a string")
        self.index += 4
        if not all(byte in HEX for byte in digits):
            raise self.error("invalid escape")
        return int(digits, 16)

    def parse_any_number(self, *, positive: bool) -> str:
        """A number where a string, list or struct belonged, as serde's `Unexpected` shows it."""
        start = self.index
        byte = self.next_char()
        if byte is None:
            raise self.error("EOF while parsing a value")
        if byte == ord("0"):
            if ord("0") <= self.peek_or_null() <= ord("9"):
                raise self.peek_error("invalid number")
        elif ord("1") <= byte <= ord("9"):
            while ord("0") <= self.peek_or_null() <= ord("9"):
                self.eat_char()
        else:
            raise self.error("invalid number")
        is_float = False
        if self.peek_or_null() == ord("."):
            is_float = True
            self.eat_char()
            if not ord("0") <= self.peek_or_null() <= ord("9"):
                raise self.peek_error("invalid number" if self.peek() is not None else "EOF while parsing a value")
            while ord("0") <= self.peek_or_null() <= ord("9"):
                self.eat_char()
        if self.peek_or_null() in (ord("e"), ord("E")):
            is_float = True
            mantissa_is_zero = not any(ord("1") <= byte <= ord("9") for byte in self.data[start : self.index])
            self.eat_char()
            positive_exponent = self.peek_or_null() != ord("-")
            if self.peek_or_null() in (ord("+"), ord("-")):
                self.eat_char()
            byte = self.next_char()
            if byte is None:
                raise self.error("EOF while parsing a value")
            if not ord("0") <= byte <= ord("9"):
                raise self.error("invalid number")
            exponent = byte - ord("0")
            while ord("0") <= (byte := self.peek_or_null()) <= ord("9"):
                self.eat_char()
                exponent = exponent * 10 + byte - ord("0")
                # serde stops at the digit that overflows an i32 exponent.
                if exponent > 2**31 - 1 and positive_exponent and not mantissa_is_zero:
                    raise self.error("number out of range")
        digits = self.data[start : self.index].decode()
        number = int(digits) if not is_float else None
        if number is not None and number <= 2**64 - 1 and (positive or (0 < number <= 2**63)):
            return f"integer `{number if positive else -number}`"
        # Past u64/i64, serde reads the number as a float; so is `-0`.
        value = float(digits) if positive else -float(digits)
        if value in (float("inf"), float("-inf")):
            raise self.error("number out of range")
        return f"floating point `{rust_float(value)}`"


def one_of(names: tuple[str, ...]) -> str:
    """serde's `OneOf`: `a`, `a` or `b`, one of `a`, `b`, `c`."""
    quoted = [f"`{name}`" for name in names]
    if len(quoted) == 1:
        return quoted[0]
    if len(quoted) == 2:
        return f"{quoted[0]} or {quoted[1]}"
    return "one of " + ", ".join(quoted)


def rust_float(value: float) -> str:
    """Rust's `{}` for f64 (shortest digits, never an exponent) plus serde's `.0` when it has no point."""
    text = format(Decimal(repr(value)), "f")
    return text if "." in text else text + ".0"


def rust_debug(text: str) -> str:
    """Rust's `{:?}` for a str, which serde uses to show an unexpected string."""
    out = []
    for char in text:
        if char in '"\\':
            out.append("\\" + char)
        elif char in "\t\r\n\0":
            out.append({"\t": "\\t", "\r": "\\r", "\n": "\\n", "\0": "\\0"}[char])
        elif char != " " and unicodedata.category(char) in ("Cc", "Cf", "Cs", "Co", "Cn", "Zs", "Zl", "Zp"):
            out.append(f"\\u{{{ord(char):x}}}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def definitions() -> list[ToolDefinition]:
    # codex-rs's own schema: `status` is a plain string there, its values only named
    # in the description, and both objects close with additionalProperties: false.
    item = {
        "type": "object",
        "properties": {
            "step": {"type": "string"},
            "status": {"type": "string", "description": "One of: pending, in_progress, completed"},
        },
        "required": ["step", "status"],
        "additionalProperties": False,
    }
    schema = {
        "type": "object",
        "properties": {
            "explanation": {"type": "string"},
            "plan": {"type": "array", "description": "The list of steps", "items": item},
        },
        "required": ["plan"],
        "additionalProperties": False,
    }
    return [ToolDefinition(name="update_plan", description=describe("update_plan"), input_schema=schema)]
