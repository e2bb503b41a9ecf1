"""Fast paths that lean on a library's private parts, each behind a fence.

A few of todoweb's measured gains come from reaching past a library's public API:
the agents' calls written on the event loop's thread (asyncio's running-loop hooks,
Django's transaction internals), work sent straight to the database thread where
asgiref would send it to its own (asgiref's executors), the one-process channel
layer's direct queues and the sockets' own consumer loop (Channels' internals). Each
such path asks `fast(name)` first. A fence is open when
the library is a version the path was tested with (the pins of requirements.txt)
and still has every private name the path uses; otherwise (another version, a name
gone, or TODOWEB_FAST_PATHS=0) todoweb takes the library's public path, slower and
the same to its users, and says so once in the log when it starts (`report`).

tests/test_fences.py fails loudly when a pinned library no longer has what a fast
path uses, and the test suite runs once more with TODOWEB_FAST_PATHS=0, so the plain
paths stay tested too. (uvicorn's and websockets' protocols have a fence of their own
in serve/server.py, which takes TODOWEB_FAST_PATHS too.)
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from importlib.metadata import version

from django.conf import settings

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Fence:
    path: str  # the fast path, in a few words
    library: str  # the distribution whose private parts it uses
    tested: tuple[str, ...]  # the versions it was tested with (prefixes: "5.2." is any 5.2)
    has: Callable[[], bool]  # whether the private names it uses are there


def asyncio_and_django_transactions() -> bool:
    import asyncio.events

    from django.db import connection
    from django.db.transaction import Atomic

    return (
        sys.version_info[:2] in {(3, 11), (3, 12), (3, 13)}
        and callable(getattr(asyncio.events, "_get_running_loop", None))
        and callable(getattr(asyncio.events, "_set_running_loop", None))
        and all(hasattr(connection, name) for name in ("run_on_commit", "needs_rollback", "in_atomic_block"))
        and all(callable(getattr(Atomic, name, None)) for name in ("__enter__", "__exit__"))
    )


def asgiref_executors() -> bool:
    from asgiref.sync import AsyncToSync, SyncToAsync

    return (
        hasattr(AsyncToSync, "executors")
        and hasattr(SyncToAsync, "thread_sensitive_context")
        and isinstance(getattr(AsyncToSync, "loop_thread_executors", None), dict)
    )


def channels_internals() -> bool:
    from channels.consumer import AsyncConsumer, get_handler_name
    from channels.layers import InMemoryChannelLayer

    layer = InMemoryChannelLayer()
    return (
        callable(get_handler_name)
        and callable(getattr(layer, "_clean_expired", None))
        and all(isinstance(getattr(layer, name, None), dict) for name in ("channels", "groups"))
        and isinstance(getattr(layer, "expiry", None), int | float)
        and callable(getattr(layer, "get_capacity", None))
        and callable(getattr(AsyncConsumer, "dispatch", None))
    )


FENCES = {
    "loop_writes": Fence(
        "agents' calls written on the event loop's thread (store/loop_writes.py)",
        "Django",
        ("5.2.",),
        asyncio_and_django_transactions,
    ),
    "asgiref": Fence(
        "database work sent straight to the database thread (store/database.py)",
        "asgiref",
        ("3.13.",),
        asgiref_executors,
    ),
    "channels": Fence(
        "the one-process layer's direct queues and the sockets' own consumer loop (live/)",
        "channels",
        ("4.3.",),
        channels_internals,
    ),
}


def enabled() -> bool:
    """Whether fast paths may be taken at all (TODOWEB_FAST_PATHS, on by default)."""
    return bool(getattr(settings, "TODOWEB_FAST_PATHS", True))


def fast(name: str) -> bool:
    """Whether the fast path `name` may be taken in this process."""
    return enabled() and fence_open(name)


@cache
def fence_open(name: str) -> bool:
    return why_shut(FENCES[name]) is None


def why_shut(fence: Fence) -> str | None:
    """Why the fence stays shut (None: it is open)."""
    installed = version(fence.library)
    if not installed.startswith(fence.tested):
        return f"{fence.library} {installed} is not a tested version ({', '.join(fence.tested)})"
    try:
        if fence.has():
            return None
    except Exception as exc:  # anything the private parts do differently
        return f"{fence.library} {installed} differs: {type(exc).__name__}: {exc}"
    return f"{fence.library} {installed} no longer has what it uses"


def report() -> None:
    """Say once, as the process starts, which fast paths it goes without, and why."""
    if not enabled():
        logger.info("TODOWEB_FAST_PATHS=0: every fast path is off, todoweb takes the libraries' public paths")
        return
    for fence in FENCES.values():
        reason = why_shut(fence)
        if reason is not None:
            logger.warning("Fast path off: %s, because %s; todoweb takes the public path", fence.path, reason)
