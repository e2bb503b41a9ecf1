"""What a delivery sends, per format: `standard` (the event as JSON, signed per
Standard Webhooks), `slack` (`{"text"}`, Slack's and Mattermost's incoming webhooks)
and `discord` (`{"content"}`). Agent text is untrusted: what Slack or Discord would
read as markup or a mention in it is escaped."""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
from typing import Any

import orjson
from django.conf import settings

from todoweb.webhooks import events

SECRET_PREFIX = "whsec_"
# Discord refuses content over 2,000 characters; Slack's texts stay short too.
MAX_TEXT = 1900
MAX_NAME = 200


def new_secret() -> str:
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(32)).decode()


def signature(secret: str, message_id: str, timestamp: int, body: bytes) -> str:
    """The webhook-signature header: `v1,` + base64 of the HMAC-SHA256, keyed with the
    secret's bytes, of `<webhook-id>.<webhook-timestamp>.<body>`."""
    key = base64.b64decode(secret.removeprefix(SECRET_PREFIX))
    signed = f"{message_id}.{timestamp}.".encode() + body
    return "v1," + base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()


def request(
    fmt: str, payload: dict[str, Any], *, secret: str, message_id: str, timestamp: int, site_url: str
) -> tuple[bytes, dict[str, str]]:
    """The body and headers of one attempt."""
    headers = {"Content-Type": "application/json", "User-Agent": "todoweb-webhooks"}
    if fmt == "slack":
        return orjson.dumps({"text": slack_text(payload, site_url)}), headers
    if fmt == "discord":
        # No mention pings, whatever the text holds.
        content = {"content": discord_text(payload, site_url), "allowed_mentions": {"parse": []}}
        return orjson.dumps(content), headers
    body = orjson.dumps(payload)
    return body, headers | {
        "webhook-id": message_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": signature(secret, message_id, timestamp, body),
    }


def panel_url(payload: dict[str, Any], site_url: str) -> str:
    path = (payload["data"].get("session") or {}).get("url") or "/"
    base = settings.TODOWEB_PUBLIC_URL or site_url.rstrip("/")
    return base + path


def one_line(text: Any, limit: int = MAX_NAME) -> str:
    text = " ".join(str(text or "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def sentence(payload: dict[str, Any], name: Any) -> str:
    """What happened, in words, with `name` turning agent text into safe text."""
    event, data = payload["type"], payload["data"]
    session = data.get("session") or {}
    title = name(session.get("title") or session.get("key") or "a session")
    project = name(session.get("project") or "")
    done = f"{session.get('completed', 0)}/{session.get('total', 0)} steps done"
    steps = ", ".join(name(step.get("content")) for step in data.get("steps") or [])
    match event:
        case events.SESSION_CREATED:
            text = f"New session: {title}"
        case events.SESSION_COMPLETED:
            text = f"Session completed: {title} ({done})"
        case events.SESSION_FAILED:
            text = f"Session failed: {title} ({done}" + (f"; failed or blocked: {steps})" if steps else ")")
        case events.SESSION_IDLE:
            current = session.get("current")
            text = f"Session idle: {title} ({done}" + (f"; at: {name(current)})" if current else ")")
        case events.PLAN_EDITED:
            who = data.get("edited_by")
            text = f"Plan edited{' by ' + name(who) if who else ''}: {title}"
        case events.STEP_FAILED:
            text = f"Step failed in {title}: {steps}"
        case events.TEST:
            text = "Test event from todoweb: this endpoint is set up"
        case _:
            text = f"{name(event)}: {title}"
    return f"[{project}] {text}" if project else text


def slack_escape(text: Any) -> str:
    """Slack's three control characters, and @ (Mattermost reads @channel, @all as mentions)."""
    text = one_line(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return text.replace("@", "@\u200b")


def slack_text(payload: dict[str, Any], site_url: str) -> str:
    text = sentence(payload, slack_escape)
    return f"{text[:MAX_TEXT]} <{panel_url(payload, site_url)}|Open the panel>"


DISCORD_MARKUP = re.compile(r"([\\*_~`|>\[\]()#<:-])")


def discord_escape(text: Any) -> str:
    """Markdown and link syntax escaped, and every @ broken (@everyone, @here, <@id>)."""
    return DISCORD_MARKUP.sub(r"\\\1", one_line(text)).replace("@", "@\u200b")


def discord_text(payload: dict[str, Any], site_url: str) -> str:
    text = sentence(payload, discord_escape)
    return f"{text[:MAX_TEXT]}\n{panel_url(payload, site_url)}"
