"""Outgoing webhooks: a project's endpoints are told of its sessions' events.

- `events.py`   which events a write causes (pure), and each event's body;
- `enqueue.py`  the deliveries an event makes, written in the write's own transaction
                (and a per-process cache, so a project without endpoints costs nothing);
- `delivery.py` the queued task that posts one delivery, records the answer, retries
                with backoff, and disables an endpoint that fails for days;
- `formats.py`  the three formats (standard, signed; slack; discord);
- `addresses.py` which addresses deliveries may reach;
- `network.py`  the HTTP client that refuses private addresses at each connection;
- `idle.py`     the recurring check that finds sessions gone idle, and puts lost tasks back;
- `worker.py`   the in-process worker thread every server process runs;
- `manage.py`   creating, deleting and testing endpoints; `reads.py` what pages show.
"""
