"""How todoweb runs: the ASGI handlers, the uvicorn server and its websocket protocol,
the one way async code reaches the database, and what the logs may hold."""
