"""Open websockets are kept out of the garbage collector's full collections, in
batches as they open; what closed ones left in reference cycles is collected once half
of the frozen ones have closed, at most once per interval (runtime.long_lived)."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from todoweb.serve.long_lived import LongLived


class Socket:
    """An object in a reference cycle, as a socket's protocol and parser are."""

    def __init__(self) -> None:
        self.me = self


@pytest.fixture(autouse=True)
def thawed() -> Iterator[None]:
    gc.collect()
    yield
    gc.unfreeze()


class Held:
    """Sockets open (held, as the server holds an open socket) and their marks."""

    def __init__(self, sockets: LongLived, n: int) -> None:
        self.sockets = sockets
        self.held = [Socket() for _ in range(n)]
        self.refs = [weakref.ref(socket) for socket in self.held]
        self.marks = [sockets.opened() for _ in self.held]

    def close(self, index: int) -> None:
        """Let go of socket `index` (only its cycle holds it now) and say it closed."""
        self.held[index] = None
        self.sockets.closed(self.marks[index])

    def gone(self) -> list[bool]:
        return [ref() is None for ref in self.refs]


def test_sockets_are_frozen_in_batches_as_they_open():
    sockets = LongLived(freeze_every=3, thaw_every=0)
    before = gc.get_freeze_count()
    first = Held(sockets, 2)
    assert gc.get_freeze_count() == before
    third = Held(sockets, 1)
    assert gc.get_freeze_count() > before
    first.held = third.held = []  # what the frozen held is out of the collector's reach
    gc.collect()
    assert first.gone() + third.gone() == [False, False, False]


def test_what_closed_sockets_left_is_collected_once_half_of_the_frozen_have_closed():
    sockets = LongLived(freeze_every=4, thaw_every=0)
    opened = Held(sockets, 4)
    opened.close(0)
    gc.collect()
    assert opened.gone() == [False, False, False, False]  # one of four closed: left frozen
    opened.close(1)  # two of four: collected
    assert opened.gone() == [True, True, False, False]
    assert gc.get_freeze_count() > 0  # the open ones frozen again
    opened.held = []
    gc.collect()
    assert opened.gone() == [True, True, False, False]


def test_it_collects_what_closed_sockets_left_at_most_once_per_interval():
    sockets = LongLived(freeze_every=2, thaw_every=3600)
    opened = Held(sockets, 6)
    for index in range(3):
        opened.close(index)  # half: the first collection
    assert opened.gone() == [True, True, True, False, False, False]
    for index in (3, 4):
        opened.close(index)  # two of the three left: half again, but within the interval
    assert opened.gone() == [True, True, True, False, False, False]


def test_a_socket_closed_before_it_was_frozen_is_left_to_the_collector():
    sockets = LongLived(freeze_every=10, thaw_every=0)
    opened = Held(sockets, 3)
    opened.close(0)
    assert (sockets.unfrozen, sockets.frozen_closed) == (2, 0)
    gc.collect()
    assert opened.gone() == [True, False, False]


def test_it_freezes_nothing_that_closed_sockets_left_before_the_freeze():
    """A socket closed before its batch was frozen: its cycle is collected, not frozen
    with the open ones (where only a later collection of the frozen would reach it)."""
    sockets = LongLived(freeze_every=3, thaw_every=3600)
    opened = Held(sockets, 2)
    opened.close(0)
    more = Held(sockets, 2)  # three open: a freeze
    assert gc.get_freeze_count() > 0
    gc.collect()
    assert opened.gone() + more.gone() == [True, False, False, False]


def test_rounds_of_sockets_that_come_and_go_leave_no_more_than_two_batches_frozen():
    """Watchers that connect in rounds and leave (within the interval between two
    collections): what they left frozen stays within twice a batch, not a round's worth
    more every round."""
    sockets = LongLived(freeze_every=4, thaw_every=3600)
    rounds = []
    for _ in range(10):
        opened = Held(sockets, 4)
        for index in range(4):
            opened.close(index)
        rounds.append(opened)
    gc.collect()
    left = sum(not gone for opened in rounds for gone in opened.gone())
    assert left <= 2 * 4, left
