"""Writers to one session are serialised: revisions 1..N, no gaps, no duplicates."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connection

from tests.conftest import Api
from todoweb.models import Revision, Session, Step

WRITERS = 40


def write(token: str, n: int, key: str = "busy") -> int:
    try:
        todos = [{"content": f"step {n}", "status": "in_progress", "activeForm": f"doing {n}"}]
        return Api(token).call(key, "TodoWrite", {"todos": todos}, call_id=f"toolu_{n}").status_code
    finally:
        connection.close()


@pytest.mark.django_db(transaction=True)
def test_it_numbers_revisions_without_gaps_under_concurrent_writers(token):
    with ThreadPoolExecutor(max_workers=WRITERS) as pool:
        statuses = list(pool.map(lambda n: write(token, n), range(WRITERS)))
    assert statuses == [200] * WRITERS
    numbers = sorted(Revision.objects.values_list("number", flat=True))
    assert numbers == list(range(1, WRITERS + 1))
    session = Session.objects.get(key="busy")
    assert session.revision == WRITERS
    last = Revision.objects.get(number=WRITERS)
    current = list(Step.objects.filter(session=session).values_list("content", flat=True))
    assert current == [t["content"] for t in last.todos]


@pytest.mark.django_db(transaction=True)
def test_it_writes_a_repeated_call_once_under_concurrency(token):
    def same(_: int) -> int:
        try:
            todos = [{"content": "once", "status": "pending", "activeForm": "once"}]
            return Api(token).call("dup", "TodoWrite", {"todos": todos}, call_id="toolu_same").status_code
        finally:
            connection.close()

    with ThreadPoolExecutor(max_workers=10) as pool:
        statuses = list(pool.map(same, range(10)))
    assert statuses == [200] * 10
    assert Revision.objects.count() == 1


@pytest.mark.django_db(transaction=True)
def test_it_creates_a_new_session_once_under_concurrent_first_writes(token):
    with ThreadPoolExecutor(max_workers=10) as pool:
        statuses = list(pool.map(lambda n: write(token, n, key="born"), range(10)))
    assert statuses == [200] * 10
    assert Session.objects.filter(key="born").count() == 1
    assert sorted(Revision.objects.values_list("number", flat=True)) == list(range(1, 11))
