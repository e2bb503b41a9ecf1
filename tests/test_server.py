"""The websocket protocol of `manage.py serve`: permessage-deflate that compresses a
message once for every socket, and that clients decode as any other."""

from __future__ import annotations

from websockets.extensions.permessage_deflate import ClientPerMessageDeflateFactory
from websockets.frames import TEXT, Frame

from todoweb.server import SharedDeflate, SharedDeflateFactory, compressed

SNAPSHOT = (
    '{"type":"session.snapshot","revision":7,"todos":[' + ",".join(['{"content":"步骤 ✓ <b>x</b>"}'] * 40) + "]}"
).encode()


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
