"""How `manage.py serve` runs todoweb: its websocket protocol (permessage-deflate that
compresses a message once for every socket, and that clients decode as any other),
its HTTP protocol (a response's head and body in one write), only on the uvicorn and
websockets versions they were tested with, and each process tuned as it loads the
application."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from contextlib import contextmanager

import uvicorn
from websockets.extensions.permessage_deflate import ClientPerMessageDeflateFactory
from websockets.frames import TEXT, Frame

from todoweb.serve.server import SharedDeflate, SharedDeflateFactory, compressed

SNAPSHOT = (
    '{"type":"session.snapshot","revision":7,"todos":[' + ",".join(['{"content":"步骤 ✓ <b>x</b>"}'] * 40) + "]}"
).encode()


@contextmanager
def serving(app, **config):
    """`app` under uvicorn in a thread, with `config`; yields its port."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", **config))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.01)
    try:
        yield port
    finally:
        server.should_exit = True
        thread.join(10)


def negotiated_pair():
    """A server extension and the client extension it agreed with, as in a handshake."""
    client_factory = ClientPerMessageDeflateFactory()
    offer = client_factory.get_request_params()
    response, server = SharedDeflateFactory().process_request_params(offer, [])
    client = client_factory.process_response_params(response, [])
    return server, client


def test_a_message_compresses_to_the_same_bytes_on_every_socket():
    (first, _), (second, _) = negotiated_pair(), negotiated_pair()
    assert isinstance(first, SharedDeflate) and first.local_no_context_takeover
    a = first.encode(Frame(TEXT, SNAPSHOT))
    b = second.encode(Frame(TEXT, SNAPSHOT))
    assert a.data == b.data and a.rsv1 and len(a.data) < len(SNAPSHOT) / 4


def test_clients_decode_every_message_in_order():
    server, client = negotiated_pair()
    messages = [SNAPSHOT, b'{"type":"pong"}', SNAPSHOT.replace(b"7", b"8"), SNAPSHOT]
    for message in messages:
        assert client.decode(server.encode(Frame(TEXT, message))).data == message


def test_the_compressed_bytes_are_computed_once_per_message():
    compressed.cache_clear()
    for _ in range(3):
        negotiated_pair()[0].encode(Frame(TEXT, SNAPSHOT))
    assert compressed.cache_info().misses == 1 and compressed.cache_info().hits == 2


def test_it_serves_with_its_own_protocols_only_on_the_tested_versions(monkeypatch, caplog):
    from todoweb.serve import server

    assert server.untested_versions() == {}  # the pinned requirements are the tested ones
    assert server.uvicorn_options() == {
        "http": "todoweb.serve.server:HttpProtocol",
        "ws": "todoweb.serve.server:WebSocketProtocol",
        "proxy_headers": False,
    }
    monkeypatch.setattr(server.uvicorn, "__version__", "0.99.0")
    assert server.untested_versions() == {"uvicorn": "0.99.0"}
    assert server.uvicorn_options() == {"http": "httptools", "ws": "websockets-sansio", "proxy_headers": False}
    assert "uvicorn 0.99.0: not the versions" in caplog.text


def test_each_server_process_is_tuned_when_it_loads_the_application():
    code = (
        "import gc, sys; from todoweb.serve.server import tuned_application; tuned_application(); "
        "print(sys.getswitchinterval(), gc.get_freeze_count() > 0)"
    )
    env = os.environ | {"DJANGO_SETTINGS_MODULE": "todoweb.settings", "DEBUG": "1"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.split() == ["0.001", "True"]
    # Importing the application alone changes nothing of the process.
    code = "import sys; import todoweb.asgi; print(sys.getswitchinterval())"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.split() == ["0.005"]


def test_no_socket_keeps_a_decompressor_between_messages():
    server, client = negotiated_pair()
    assert server.remote_no_context_takeover and client.local_no_context_takeover
    assert not hasattr(server, "decoder")  # made for a compressed message from the client, then dropped
    message = b'{"type":"ping"}' * 20
    assert server.decode(client.encode(Frame(TEXT, message))).data == message


def test_a_served_socket_lets_go_of_its_handshake():
    import asyncio

    import websockets

    from todoweb.serve import server

    async def app(scope, receive, send):
        assert (await receive())["type"] == "websocket.connect"
        await send({"type": "websocket.accept"})
        await send({"type": "websocket.send", "text": "hello"})
        await receive()

    kept, requests, attributes = [], [], []
    original = server.WebSocketProtocol.send
    original_connect = server.WebSocketProtocol.handle_connect

    async def noting(self, message):
        await original(self, message)
        if message["type"] == "websocket.accept":
            kept.append((self.request, self.response))
            attributes.append(len(vars(self)))

    def noting_request(self, event):
        requests.append(event)  # as the websockets library's parser keeps it
        original_connect(self, event)

    async def connect(port):
        async with websockets.connect(f"ws://127.0.0.1:{port}/") as socket_:
            return await asyncio.wait_for(socket_.recv(), 5)

    server.WebSocketProtocol.send = noting
    server.WebSocketProtocol.handle_connect = noting_request
    try:
        with serving(app, ws="todoweb.serve.server:WebSocketProtocol") as port:
            assert asyncio.run(connect(port)) == "hello"
    finally:
        server.WebSocketProtocol.send = original
        server.WebSocketProtocol.handle_connect = original_connect
    assert kept == [(None, None)]
    assert len(requests) == 1 and list(requests[0].headers.raw_items()) == []
    assert (requests[0].path, requests[0].method, requests[0].protocol) == ("", "", "")
    # Past 30 attributes in its __dict__, an instance stops sharing its keys with the
    # class's other instances (CPython): 1.6 KB more a socket.
    assert attributes and attributes[0] <= 30, attributes


def test_libraries_only_some_deployments_use_are_imported_on_first_use():
    code = (
        "import sys; from todoweb.serve.server import tuned_application; tuned_application(); "
        "import todoweb.urls; "
        "print(' '.join(sorted(m for m in ('mcp', 'httpx', 'jsonschema', 'google.protobuf', 'twisted') if m in sys.modules)))"
    )
    env = os.environ | {"DJANGO_SETTINGS_MODULE": "todoweb.settings", "DEBUG": "1"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.strip() == ""


def test_a_frame_written_at_once_is_the_frame_the_protocol_would_send():
    from websockets.frames import TEXT

    from todoweb.serve.server import shared_frame

    for text in ["short", "步骤 ✓ " * 40, "x" * 70_000]:
        server, client = negotiated_pair()
        expected = Frame(TEXT, text.encode()).serialize(mask=False, extensions=[server])
        assert shared_frame(text, server.local_max_window_bits) == expected
        assert shared_frame(text, None) == Frame(TEXT, text.encode()).serialize(mask=False)


async def test_the_receive_queue_hands_out_items_in_order_and_wakes_a_waiting_get():
    import asyncio

    from todoweb.serve.server import ReceiveQueue

    queue = ReceiveQueue()
    assert queue.empty()
    queue.put_nowait(1)
    queue.put_nowait(2)
    assert not queue.empty()
    assert [await queue.get(), await queue.get()] == [1, 2]
    waiting = asyncio.ensure_future(queue.get())
    await asyncio.sleep(0)
    assert not waiting.done()
    queue.put_nowait(3)
    assert await asyncio.wait_for(waiting, 1) == 3
    assert queue.empty() and queue.getters == []


async def test_a_get_cancelled_before_an_item_comes_takes_none():
    import asyncio

    from todoweb.serve.server import ReceiveQueue

    queue = ReceiveQueue()
    first, second = queue.get(), queue.get()
    first.cancel()
    queue.put_nowait("a")
    assert await asyncio.wait_for(second, 1) == "a"
    assert first.cancelled() and queue.getters == [] and queue.empty()
    queue.put_nowait("b")
    assert await queue.get() == "b"


async def test_the_flag_waits_until_set():
    import asyncio

    from todoweb.serve.server import Flag

    flag = Flag()
    assert not flag.is_set()
    waiting = asyncio.ensure_future(flag.wait())
    await asyncio.sleep(0)
    assert not waiting.done()
    flag.set()
    assert await asyncio.wait_for(waiting, 1) is True
    assert flag.is_set() and flag.waiters == []
    assert await flag.wait() is True  # set: at once
    flag.clear()
    again = asyncio.ensure_future(flag.wait())
    await asyncio.sleep(0)
    assert not again.done()
    flag.set()
    await asyncio.wait_for(again, 1)


class Wire:
    """A transport that notes each write."""

    def __init__(self):
        self.writes, self.closed = [], False

    def write(self, data):
        self.writes.append(data)

    def close(self):
        self.closed = True

    def is_closing(self):
        return self.closed


async def test_a_response_head_goes_out_with_its_body_in_one_write():
    from todoweb.serve.server import HeadWithBody

    wire = Wire()
    transport = HeadWithBody(wire)
    transport.write(b"HTTP/1.1 200 OK\r\n\r\n")
    assert wire.writes == []
    transport.write(b"body")
    transport.write(b"more")
    assert wire.writes == [b"HTTP/1.1 200 OK\r\n\r\nbody", b"more"]


async def test_a_head_whose_body_comes_later_goes_out_at_the_loop_s_next_turn():
    import asyncio

    from todoweb.serve.server import HeadWithBody

    wire = Wire()
    transport = HeadWithBody(wire)
    transport.write(b"HTTP/1.1 200 OK\r\n\r\n")
    await asyncio.sleep(0)
    assert wire.writes == [b"HTTP/1.1 200 OK\r\n\r\n"]
    transport.write(b"part")
    assert wire.writes[-1] == b"part"


async def test_a_held_head_is_written_before_the_connection_closes():
    from todoweb.serve.server import HeadWithBody

    wire = Wire()
    transport = HeadWithBody(wire)
    transport.write(b"HTTP/1.1 204 No Content\r\n\r\n")
    transport.close()
    assert wire.writes == [b"HTTP/1.1 204 No Content\r\n\r\n"] and wire.closed


def test_the_http_protocol_answers_streams_and_continues_as_uvicorn_s():
    """Through a real server: a stream's head arrives before its first part is sent, a
    client that expects 100 Continue gets it before it sends its body, and a plain
    answer arrives whole."""
    import asyncio

    first_part = threading.Event()

    async def app(scope, receive, send):
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        if scope["path"] == "/stream":
            await send({"type": "http.response.start", "status": 200})
            await asyncio.get_running_loop().run_in_executor(None, first_part.wait, 5)
            await send({"type": "http.response.body", "body": b"first", "more_body": True})
            await send({"type": "http.response.body", "body": b"last"})
            return
        answer = b"echo:" + body
        await send(
            {"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"%d" % len(answer))]}
        )
        await send({"type": "http.response.body", "body": answer})

    def read_until(sock, marker):
        data = b""
        while marker not in data:
            chunk = sock.recv(65536)
            assert chunk, data
            data += chunk
        return data

    with serving(app, http="todoweb.serve.server:HttpProtocol") as port:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
            sock.sendall(b"GET /stream HTTP/1.1\r\nHost: x\r\n\r\n")
            head = read_until(sock, b"\r\n\r\n")  # while the app waits to send its first part
            assert head.startswith(b"HTTP/1.1 200 OK\r\n") and b"transfer-encoding: chunked" in head
            first_part.set()
            assert read_until(sock, b"0\r\n\r\n") == b"5\r\nfirst\r\n4\r\nlast\r\n0\r\n\r\n"

            sock.sendall(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
            assert read_until(sock, b"\r\n\r\n").startswith(b"HTTP/1.1 100 Continue\r\n\r\n")
            sock.sendall(b"hello")
            answer = read_until(sock, b"echo:hello")
            assert answer.startswith(b"HTTP/1.1 200 OK\r\n") and answer.endswith(b"\r\n\r\necho:hello")


def test_a_served_socket_is_held_out_of_full_collections_while_open(monkeypatch):
    import asyncio

    import websockets

    from todoweb.serve import server
    from todoweb.serve.long_lived import LongLived

    sockets = LongLived(freeze_every=1000)
    monkeypatch.setattr(server, "SOCKETS", sockets)
    seen_open = []

    async def app(scope, receive, send):
        assert (await receive())["type"] == "websocket.connect"
        seen_open.append(sockets.unfrozen)
        await send({"type": "websocket.accept"})
        await send({"type": "websocket.send", "text": "hello"})
        await receive()

    async def connect(port):
        async with websockets.connect(f"ws://127.0.0.1:{port}/") as socket_:
            return await asyncio.wait_for(socket_.recv(), 5)

    with serving(app, ws="todoweb.serve.server:WebSocketProtocol") as port:
        assert asyncio.run(connect(port)) == "hello"
    assert seen_open == [1]
    assert sockets.unfrozen == 0  # closed: no longer counted
