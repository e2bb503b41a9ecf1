"""The README's examples work as written: each dialect's example input in the
"at a glance" table, sent to its first tool name, is routed to that dialect and
accepted."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"
ROW = re.compile(r"^\| `(?P<dialect>[a-z-]+)` \| [^|]+ \| `(?P<tool>\w+)`.*\| `(?P<example>\{.*\})` \|$")


def glance_rows() -> list[tuple[str, str, dict]]:
    rows = []
    for line in README.read_text(encoding="utf-8").splitlines():
        match = ROW.match(line)
        if match:
            rows.append((match["dialect"], match["tool"], json.loads(match["example"])))
    return rows


def test_the_table_lists_every_dialect():
    from todoweb import dialects

    assert sorted(dialect for dialect, _, _ in glance_rows()) == sorted(dialects.dialects())


@pytest.mark.parametrize(("dialect", "tool", "example"), glance_rows(), ids=lambda v: v if isinstance(v, str) else "")
def test_each_example_is_accepted_by_its_dialect(api, dialect, tool, example):
    r = api.call("readme", tool, example)
    assert r.status_code == 200, r.content
    assert r.json()["dialect"] == dialect
    assert api.revision("readme") == 1
