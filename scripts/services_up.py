"""Exit 0 when PostgreSQL and Redis answer at the given URLs (used by `make test`)."""

from __future__ import annotations

import sys

import psycopg
import redis


def main(database_url: str, redis_url: str) -> int:
    try:
        psycopg.connect(database_url.rsplit("/", 1)[0] + "/postgres", connect_timeout=3).close()
        redis.Redis.from_url(redis_url, socket_connect_timeout=3).ping()
    except Exception as exc:  # any failure means "not reachable"
        print(f"not reachable: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
