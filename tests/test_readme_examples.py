"""The documented examples work as written: each dialect's example input in the
"at a glance" table of docs/dialects.md (the README's "Supported tools" link), sent to
its first tool name, is routed to that dialect and accepted."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

DIALECTS = Path(__file__).resolve().parent.parent / "docs" / "dialects.md"
ROW = re.compile(r"^\| `(?P<dialect>[a-z-]+)` \| [^|]+ \| `(?P<tool>\w+)`.*\| `(?P<example>\{.*\})` \|$")


def glance_rows() -> list[tuple[str, str, dict]]:
    rows = []
    for line in DIALECTS.read_text(encoding="utf-8").splitlines():
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


ROOT = DIALECTS.parent.parent
README = ROOT / "README.md"
# A curl call of the README: its URL (path and query) and its single-quoted JSON body.
CURL = re.compile(
    r"curl -s '?http://127\.0\.0\.1:8000(?P<path>/api/v1/sessions/[^ ']+)'? .*?-d '(?P<body>[^']*)'", re.S
)
# What the README says comes back, per call shape: the reply's type and key fields.
REPLIES = {
    "tool_use": {"type": "tool_result", "tool_use_id": "toolu_01", "is_error": False},
    "function": {"role": "tool", "tool_call_id": "call_01"},
    "function_call": {"type": "function_call_output", "call_id": "call_02"},
    None: {"tool_use_id": "c1", "content": "Todo list updated", "is_error": False},
}


def readme_calls() -> list[tuple[str, dict]]:
    blocks = re.findall(r"```sh\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    return [(m["path"], json.loads(m["body"])) for block in blocks for m in CURL.finditer(block)]


def test_the_readme_shows_one_call_of_each_shape():
    assert sorted(str(body.get("type")) for _, body in readme_calls()) == sorted(str(k) for k in REPLIES)


@pytest.mark.parametrize(
    ("path", "body"), readme_calls(), ids=lambda v: v.get("type", "plain") if isinstance(v, dict) else ""
)
def test_each_readme_call_is_answered_as_the_readme_says(api, path, body):
    response = api.post(path, body)
    assert response.status_code == 200, response.content
    reply = response.json()["reply"]
    assert reply.items() >= REPLIES[body.get("type")].items()


# [text](target) in Markdown, outside code; a target with a scheme is not ours to check.
LINK = re.compile(r"(?<!!)\[[^\]]*\]\((?P<target>[^)\s]+)\)|!\[[^\]]*\]\((?P<image>[^)\s]+)\)")


def anchors(path: Path) -> set[str]:
    """GitHub's ids for a Markdown file's headings."""
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)
    ids = set()
    for heading in re.findall(r"^#+ (.+)$", text, re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower().replace("`", "")).replace(" ", "-")
        ids.add(slug)
    return ids


def doc_links() -> list[tuple[str, str]]:
    links = []
    for doc in [README, *sorted((ROOT / "docs").glob("*.md"))]:
        text = re.sub(r"```.*?```", "", doc.read_text(encoding="utf-8"), flags=re.S)
        for m in LINK.finditer(text):
            target = m["target"] or m["image"]
            if "://" not in target and not target.startswith("mailto:"):
                links.append((str(doc.relative_to(ROOT)), target))
    return links


@pytest.mark.parametrize(("doc", "target"), doc_links())
def test_every_link_of_the_docs_leads_somewhere(doc, target):
    source = ROOT / doc
    path, _, anchor = target.partition("#")
    file = (source.parent / path).resolve() if path else source
    assert file.exists(), f"{doc}: {target} does not exist"
    if anchor:
        assert anchor in anchors(file), f"{doc}: no heading for #{anchor} in {file.relative_to(ROOT)}"
