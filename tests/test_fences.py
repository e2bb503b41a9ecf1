"""The fast paths that lean on a library's private parts: each fence is open on the
pinned versions (a library upgrade that changes what a path uses fails here, by name),
and shut, with its reason, on any other."""

from __future__ import annotations

import pytest

from todoweb import fences
from todoweb.fences import FENCES, Fence


@pytest.mark.parametrize("name", sorted(FENCES))
def test_it_finds_what_each_fast_path_uses_in_the_pinned_libraries(name):
    assert fences.why_shut(FENCES[name]) is None


def test_it_shuts_a_fence_on_a_version_it_was_not_tested_with():
    fence = Fence("a path", "Django", ("4.0.",), lambda: True)
    assert "not a tested version (4.0.)" in fences.why_shut(fence)


def test_it_shuts_a_fence_when_a_private_name_is_gone_or_differs():
    gone = Fence("a path", "Django", ("5.2.",), lambda: False)
    assert "no longer has what it uses" in fences.why_shut(gone)

    def differs() -> bool:
        raise TypeError("takes 2 arguments")

    assert "differs: TypeError: takes 2 arguments" in fences.why_shut(Fence("a path", "Django", ("5.2.",), differs))


def test_fast_paths_off_takes_every_public_path(settings):
    settings.TODOWEB_FAST_PATHS = False
    assert not any(fences.fast(name) for name in FENCES)
    settings.TODOWEB_FAST_PATHS = True
    assert all(fences.fast(name) for name in FENCES)


def test_it_says_which_paths_are_off_when_it_starts(settings, caplog, monkeypatch):
    monkeypatch.setitem(FENCES, "old", Fence("an old path", "Django", ("1.0.",), lambda: True))
    fences.report()
    assert "Fast path off: an old path, because Django" in caplog.text
