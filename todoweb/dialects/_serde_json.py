"""A small port of serde_json's deserializer: the parts that a derived
`#[serde(deny_unknown_fields)]` struct of strings, string enums and vectors exercises.

serde reads the text as a stream and stops at the first problem, so the error that
wins is the first one *in the text*, worded by serde and placed by it. Python's json
module cannot say that (it builds the whole value first and forgets where things
were). A dialect subclasses `Deserializer` with its own structs (see codex.py).

Positions are serde's: lines count `\\n`, columns count UTF-8 *bytes* since the line
start. An error found while looking at a character is placed on that character
(1-based); an error found after reading a token is placed on its last byte; serde's
"custom" errors (unknown or missing field, invalid type, unknown variant) take the
position where the parser stood when the error reached the enclosing value, which is
why `missing field` points at the object's closing brace. Method names follow
serde_json's so the port can be checked against it.
"""

from __future__ import annotations

import re
import unicodedata
from decimal import Decimal
from typing import Any

WHITESPACE = b" \n\t\r"
# Where a string's plain run of bytes ends: its closing quote, an escape, or a control character.
STRING_STOP = re.compile(rb'["\\\x00-\x1f]')
ESCAPES = {ord('"'): '"', ord("\\"): "\\", ord("/"): "/", ord("b"): "\b", ord("f"): "\f"}
ESCAPES |= {ord("n"): "\n", ord("r"): "\r", ord("t"): "\t"}
HEX = frozenset(b"0123456789abcdefABCDEF")
MISSING: Any = object()


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


class Deserializer:
    """serde_json's `Deserializer<StrRead>`: bytes, positions, and the generic pieces."""

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
