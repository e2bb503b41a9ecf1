"""JavaScript's behaviour where dialects of JavaScript tools must match it byte for byte:
String.prototype.trim, a string's length, Number.prototype.toString, JSON.stringify."""

from __future__ import annotations

import json
import math
import re
from decimal import Decimal
from typing import Any

# JavaScript's String.prototype.trim(): WhiteSpace and LineTerminator. Unlike
# Python's str.strip() it trims U+FEFF and leaves U+001C–U+001F and U+0085 alone;
# like it, it trims U+3000 and U+00A0 but not U+200B.
JS_WHITESPACE = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
    "\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)
# A property name JavaScript orders before all others: an array index.
ARRAY_INDEX = re.compile(r"0|[1-9][0-9]*")


def js_trim(text: str) -> str:
    return text.strip(JS_WHITESPACE)


def utf16_len(text: str) -> int:
    """A JavaScript string's `length`: UTF-16 code units (an emoji counts 2)."""
    return len(text.encode("utf-16-le")) // 2


def js_number(value: int | float) -> str:
    """Number.prototype.toString(): shortest round-trip digits, JavaScript's layout."""
    try:
        number = float(value)
    except OverflowError:
        number = math.copysign(math.inf, value)
    if math.isnan(number):
        return "NaN"
    if math.isinf(number):
        return "Infinity" if number > 0 else "-Infinity"
    if number == 0:
        return "0"
    sign = "-" if number < 0 else ""
    _, digits, exponent = Decimal(repr(abs(number))).normalize().as_tuple()
    assert isinstance(exponent, int)  # a finite number: not NaN's 'n' nor infinity's 'F'
    text = "".join(map(str, digits))
    k, n = len(text), exponent + len(text)
    if k <= n <= 21:
        body = text + "0" * (n - k)
    elif 0 < n <= 21:
        body = f"{text[:n]}.{text[n:]}"
    elif -6 < n <= 0:
        body = "0." + "0" * -n + text
    else:
        mantissa = text if k == 1 else f"{text[0]}.{text[1:]}"
        body = f"{mantissa}e{'+' if n - 1 >= 0 else '-'}{abs(n - 1)}"
    return sign + body


def js_json(value: Any) -> str:
    """JSON.stringify(value): compact, raw Unicode, JavaScript's numbers and key order
    (property names that are array indexes first, ascending)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        text = js_number(value)
        return text if text not in ("NaN", "Infinity", "-Infinity") else "null"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ",".join(js_json(element) for element in value) + "]"
    return (
        "{" + ",".join(f"{json.dumps(key, ensure_ascii=False)}:{js_json(value[key])}" for key in js_keys(value)) + "}"
    )


def js_keys(obj: dict[str, Any]) -> list[str]:
    """An object's own keys in JavaScript's order."""
    indexes = [key for key in obj if ARRAY_INDEX.fullmatch(key) and int(key) < 2**32 - 1]
    return sorted(indexes, key=int) + [key for key in obj if key not in set(indexes)]
