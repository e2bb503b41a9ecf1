"""The ASGI server and the process around it: the lean handlers in front of Django, the agents' route,
uvicorn's protocols as todoweb tunes them, and what a long-running process keeps (its secret key check,
open sockets out of the garbage collector's full collections). Nothing below imports it."""
