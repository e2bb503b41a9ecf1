"""The scale-out path: events cross processes through Redis."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys

import pytest
import redis
from asgiref.sync import async_to_sync, sync_to_async
from channels.layers import channel_layers, get_channel_layer

from tests.conftest import IN_CI
from todoweb.live import events

REDIS_TEST_URL = os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/0"


def redis_up() -> bool:
    try:
        return redis.Redis.from_url(REDIS_TEST_URL, socket_connect_timeout=2).ping()
    except redis.RedisError:
        return False


@pytest.fixture
def redis_layer(settings):
    if not redis_up():
        if IN_CI:
            pytest.fail(f"CI=true but Redis is not reachable at {REDIS_TEST_URL}")
        pytest.skip(f"Redis is not reachable at {REDIS_TEST_URL}")
    settings.CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
            "CONFIG": {"hosts": [REDIS_TEST_URL], "prefix": settings.TODOWEB_CHANNEL_PREFIX},
        }
    }
    channel_layers.backends.clear()
    yield get_channel_layer()
    channel_layers.backends.clear()


def receive_after(layer, group: str, action) -> dict:
    """Join `group`, run the blocking `action`, and return the next message of the group.

    All on one event loop: the pub/sub layer keeps one connection per loop, and
    `action`'s own async_to_sync calls run on this loop too.
    """

    async def scenario() -> dict:
        channel = await layer.new_channel()
        await layer.group_add(group, channel)
        await sync_to_async(action)()
        return await asyncio.wait_for(layer.receive(channel), timeout=5)

    return async_to_sync(scenario)()


def test_it_delivers_an_event_sent_by_another_process(redis_layer):
    code = (
        "import django; django.setup(); from todoweb.live import events; "
        "events.send(events.frames(events.SessionState(session='crossproc', revision=7, state='idle', title='t'), "
        "'session-crossproc'))"
    )
    env = os.environ | {"REDIS_URL": REDIS_TEST_URL, "DJANGO_SETTINGS_MODULE": "todoweb.settings"}
    message = receive_after(
        redis_layer,
        "session-crossproc",
        lambda: subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=60),
    )
    assert (message["type"], message["kind"], message["revision"]) == (events.FRAME, "session.state", 7)
    assert json.loads(message["text"]) == {
        "type": "session.state",
        "session": "crossproc",
        "revision": 7,
        "state": "idle",
        "title": "t",
    }


def test_it_publishes_a_write_through_redis(redis_layer, api):
    api.call("warmup", "TodoWrite", {"todos": []})
    from todoweb.models import Session

    public_id = Session.objects.get(key="warmup").public_id
    todos = [{"content": "scale out", "status": "in_progress", "activeForm": "scaling out"}]

    def write() -> None:
        api.call("warmup", "TodoWrite", {"todos": todos})

    event = json.loads(receive_after(redis_layer, f"session-{public_id}", write)["text"])
    assert event["type"] == "session.snapshot"
    assert event["revision"] == 2
    assert event["todos"][0]["content"] == "scale out"


def test_it_publishes_nothing_for_a_rejected_call(api, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks() as callbacks:
        api.call("s1", "TodoWrite", {"todos": [{"content": ""}]})
    assert callbacks == []


def test_it_keeps_two_deployments_on_one_redis_server_apart(redis_layer):
    """Redis pub/sub ignores the database number: the channel prefix keeps them apart."""
    from channels_redis.pubsub import RedisPubSubChannelLayer

    ours = RedisPubSubChannelLayer(hosts=[REDIS_TEST_URL], prefix="todoweb.deployment-a")
    theirs = RedisPubSubChannelLayer(hosts=[REDIS_TEST_URL], prefix="todoweb.deployment-b")

    async def scenario() -> dict:
        channel = await ours.new_channel()
        await ours.group_add(events.STAFF_GROUP, channel)
        await theirs.group_send(events.STAFF_GROUP, {"type": "session.summary", "from": "theirs"})
        # Published after theirs on the same server, so it arrives after theirs would.
        await ours.group_send(events.STAFF_GROUP, {"type": "session.summary", "from": "ours"})
        message = await asyncio.wait_for(ours.receive(channel), timeout=5)
        await ours.flush()
        await theirs.flush()
        return message

    assert async_to_sync(scenario)()["from"] == "ours"


def test_a_cut_subscription_is_seen_through_redis_py_s_connect_callback(redis_layer, settings):
    # The pub/sub layer subscribes again by itself after a cut, and says nothing of it
    # but a log line: the live hub learns of it from the connection made again.
    from channels_redis.pubsub import RedisPubSubChannelLayer

    from todoweb import redis_connections

    hosts = settings.CHANNEL_LAYERS  # the layer as settings.py configures it with REDIS_URL
    layer = RedisPubSubChannelLayer(
        hosts=[
            {
                "address": REDIS_TEST_URL,
                "redis_connect_func": redis_connections.connected,
                "client_name": "todoweb-test-cut",
            }
        ],
        prefix=hosts["default"]["CONFIG"]["prefix"],
    )

    async def scenario() -> tuple[int, int, dict]:
        channel = await layer.new_channel()
        await layer.group_add("cut-subscription", channel)
        receiving = asyncio.ensure_future(layer.receive(channel))
        await asyncio.sleep(0)
        before = redis_connections.made
        server = redis.Redis.from_url(REDIS_TEST_URL)
        ours = [client["id"] for client in server.client_list(_type="pubsub") if client["name"] == "todoweb-test-cut"]
        killed = sum(server.client_kill_filter(_id=client) for client in ours)
        for _ in range(200):  # redis-py reconnects within about a second
            if redis_connections.made > before:
                break
            await asyncio.sleep(0.05)
        await layer.group_send("cut-subscription", {"type": "after.cut"})
        message = await asyncio.wait_for(receiving, timeout=5)
        await layer.flush()
        return killed, redis_connections.made - before, message

    killed, connected_again, message = async_to_sync(scenario)()
    assert killed >= 1 and connected_again >= 1
    assert message["type"] == "after.cut"
