"""The connections to Redis that the channel layer opens in this process, counted.

The pub/sub layer (channels_redis) subscribes again by itself when its connection to
Redis is cut (a Redis restart, a proxy's idle timeout), and `receive()` never fails;
yet whatever was published meanwhile is lost. redis-py calls `connected` for every
connection it opens (its `redis_connect_func`, which settings.py gives the layer's
hosts), so a count that moves after the first connections says a connection was made
again: the live hub then catches up from the database (todoweb.live.hub).
"""

from __future__ import annotations

from typing import Any

made = 0


async def connected(connection: Any) -> None:
    """Count the connection, then set it up as redis-py does by default."""
    global made
    made += 1
    await connection.on_connect()
