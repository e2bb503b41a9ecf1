"""A write costs a bounded number of queries whatever the list length."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

MAX_QUERIES_PER_WRITE = 16


def todos(n: int) -> dict:
    return {"todos": [{"content": f"step {i}", "status": "pending", "activeForm": f"doing {i}"} for i in range(n)]}


def count_queries(api, key: str, args: dict) -> int:
    with CaptureQueriesContext(connection) as queries:
        r = api.call(key, "TodoWrite", args)
    assert r.status_code == 200, r.content
    return len(queries)


@pytest.mark.parametrize("n", [1, 100])
def test_it_bounds_the_queries_of_a_first_and_a_later_write(api, n):
    first = count_queries(api, f"s{n}", todos(n))
    later = count_queries(api, f"s{n}", todos(n))
    assert first <= MAX_QUERIES_PER_WRITE
    assert later <= MAX_QUERIES_PER_WRITE


def test_it_costs_about_the_same_for_1_and_100_items(api):
    count_queries(api, "one", todos(1))
    count_queries(api, "many", todos(100))
    one = count_queries(api, "one", todos(1))
    many = count_queries(api, "many", todos(100))
    # bulk_create may split 100 rows in two INSERTs on SQLite (999 parameters).
    assert many - one <= 1, (one, many)
