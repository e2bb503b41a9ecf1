"""System tests: real server processes (tests/servers.py), run once per `make test`.
Tests that need PostgreSQL or a redis-server skip without them, except under CI=true."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.servers import RedisServer, postgres_database, postgres_up, redis_server_installed, require


@pytest.fixture
def postgres_url() -> Iterator[str]:
    require(postgres_up(), "PostgreSQL is not reachable at PG_TEST_URL")
    with postgres_database() as url:
        yield url


@pytest.fixture
def private_redis() -> Iterator[RedisServer]:
    require(redis_server_installed(), "redis-server is not installed")
    server = RedisServer().start()
    yield server
    server.stop()
