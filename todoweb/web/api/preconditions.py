"""Conditional requests: `If-Match` names the revision a write was made on, and
`If-None-Match` the revision a reader already has. A revision's ETag is `"<number>"`.
"""

from __future__ import annotations

import re

from django.utils.http import parse_etags

from todoweb.calls.errors import ApiError

# ASCII digits only: a header is read as Latin-1, where "²" and "¹" count as digits
# to str.isdigit() but are no number to int(). A number past the last revision is a
# revision the session is not at (409), not a malformed header.
REVISION = re.compile(r"[0-9]{1,10}")


IF_MATCH_PARAMETER = {
    "in": "header",
    "name": "If-Match",
    "required": True,
    "schema": {"type": "string", "pattern": r'^(W/"[0-9]{1,10}"|"[0-9]{1,10}"|[0-9]{1,10})$'},
    "description": 'The revision the edit was made on: "3" (the resume endpoint\'s ETag), W/"3" or 3',
}


def etag(revision: int) -> str:
    return f'"{revision}"'


def if_match_revision(header: str | None, *, required: bool) -> int | None:
    """The revision an If-Match header names: `"3"` (an ETag), `W/"3"` or a bare `3`.
    None when there is none, or `*` (any revision), and the request may go without."""
    header = (header or "").strip()
    if not header or (header == "*" and not required):
        if required:
            raise ApiError(
                428,
                "precondition_required",
                "Send 'If-Match: <revision>', the revision the edit was made on, so that a write of the agent's "
                "in between is not overwritten",
            )
        return None
    tags = parse_etags(header) if '"' in header else [header]
    text = tags[0].removeprefix("W/").strip('"') if len(tags) == 1 else ""
    if not REVISION.fullmatch(text):
        raise ApiError(400, "invalid_if_match", f'If-Match must name one revision number, like "3"; got {header!r}')
    return int(text)


def none_match(header: str | None, current: str) -> bool:
    """Whether If-None-Match names the ETag `current` (or `*`). It compares weakly
    (RFC 9110 13.1.2): W/"3" matches "3"; a bare revision number, as hand-written
    clients send it, counts as its ETag."""
    header = (header or "").strip()
    if REVISION.fullmatch(header):
        header = etag(int(header))
    tags = parse_etags(header)
    return "*" in tags or current in (tag.removeprefix("W/") for tag in tags)
