"""A session title that comes with a tool call: the plain form's `title` field, the
`X-Todoweb-Title` header or the tool endpoint's `?title=`, in that order.

The most specific wins: the body is one call's, a header is often set once on a
client, a query string once in a configured URL. A title is checked as the API's
rename is (at most as long as the session's title field) and cleaned as the board's
rename is: runs of whitespace become one space, and the other control characters
(C0, DEL, C1) become spaces too, so that no terminal escape or bell reaches a page,
an export or a log. A title that is blank once cleaned is no title.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import unquote

from todoweb.calls.errors import InvalidInput
from todoweb.models import Session

TITLE_MAX_CHARS: int = Session._meta.get_field("title").max_length
HEADER = "X-Todoweb-Title"
# RFC 8187's form for text beyond Latin-1 in a header: UTF-8''%E4%B8%AD…
EXT_VALUE = "utf-8''"
CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def checked(value: Any, where: str) -> str | None:
    """The title `value` gives (None: none), or InvalidInput naming `where` it came from."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidInput(f"{where} must be a string", details={"field": "title"})
    if len(value) > TITLE_MAX_CHARS:
        raise InvalidInput(
            f"{where} is longer than {TITLE_MAX_CHARS} characters ({len(value)})",
            details={"field": "title", "max_length": TITLE_MAX_CHARS},
        )
    return cleaned(value) or None


def cleaned(text: str) -> str:
    """One line: control characters and runs of whitespace become one space, trimmed."""
    if CONTROL.search(text):
        text = CONTROL.sub(" ", text)
    return " ".join(text.split())


def header_text(value: str) -> str:
    """The header's text. Servers hand header bytes over as Latin-1; a client that sent
    UTF-8 bytes meant UTF-8, and `UTF-8''` with percent-escapes (RFC 8187) says so in ASCII."""
    if value[: len(EXT_VALUE)].lower() == EXT_VALUE:
        try:
            return unquote(value[len(EXT_VALUE) :], errors="strict")
        except UnicodeDecodeError:
            raise InvalidInput(
                f"{HEADER}: the percent-escapes after UTF-8'' are not UTF-8", details={"field": "title"}
            ) from None
    try:
        return value.encode("latin-1").decode("utf-8")
    except UnicodeEncodeError:
        return value  # already text (a server that decoded it)
    except UnicodeDecodeError:
        return value  # Latin-1 it was


def call_title(header: str | None, query: str | None) -> str | None:
    """The title of the header, else of `?title=`, each checked whichever wins (the plain
    form's field wins over both: envelopes.parse_call)."""
    from_header = checked(header_text(header), f"The {HEADER} header") if header is not None else None
    from_query = checked(query, "The title parameter")
    return from_header or from_query
