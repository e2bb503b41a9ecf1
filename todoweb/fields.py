"""CompressedJSONField: JSON kept compressed, for the large values every revision
stores (its plan, its call's input, the first answer kept for replays).

A 10-step TodoWrite's answer is 5.2 KB of JSON and about 1 KB compressed, its plan
3.1 KB and 0.4 KB: compressed, a revision stores a third to a half of what it did.
Values read back are the same Python objects (the JSON's key order kept, on
PostgreSQL too). Not for querying into: the database sees bytes.

Values are written as zstd frames (level 1, a compressor per thread, reused): for a
write's three values (plan, input, answer; 9.4 KB of JSON) 223k instructions and
1,393 bytes, where zlib at its fastest took 451k and 1,553 bytes. Values written
before as zlib streams are read as such: a zstd frame is told by its magic number.
"""

from __future__ import annotations

import json
import threading
import zlib
from typing import Any

import orjson
import zstandard
from django.db import models

LEVEL = 1
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


class Contexts(threading.local):
    """zstd's contexts, made once per thread: making one costs more than compressing a plan."""

    def __init__(self) -> None:
        self.compressor = zstandard.ZstdCompressor(level=LEVEL)
        self.decompressor = zstandard.ZstdDecompressor()


_contexts = Contexts()


class Serialised(str):
    """JSON text serialised already: stored as it is, not serialised again."""


def encode(value: Any) -> bytes:
    if isinstance(value, Serialised):
        return value.encode()
    try:
        return orjson.dumps(value)
    except orjson.JSONEncodeError:
        # An integer beyond 64 bits or a lone surrogate, which orjson refuses.
        return json.dumps(value).encode()


def decode(data: bytes) -> Any:
    # json, not orjson: orjson reads an integer beyond 64 bits as a float (and looking
    # for one first costs more than json's own parse of a few KB).
    return json.loads(data)


def compress(data: bytes) -> bytes:
    return _contexts.compressor.compress(data)


def decompress(data: bytes) -> bytes:
    """A zstd frame, or a zlib stream (values written before zstd)."""
    if not data.startswith(ZSTD_MAGIC):
        return zlib.decompress(data)
    return _contexts.decompressor.decompress(data)


class CompressedJSONField(models.BinaryField):
    """`wide_integers=False`: the values are todoweb's own (a plan's steps), which hold
    no integer beyond 64 bits, and are read with orjson (4x faster than json for a
    10-step plan). An agent's input and an answer that quotes it may hold one."""

    description = "JSON, compressed (zstd)"

    def __init__(self, *args: Any, wide_integers: bool = True, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Not a column property: left out of deconstruct(), so migrations do not see it.
        self.decode = decode if wide_integers else orjson.loads

    def from_db_value(self, value: Any, expression: Any, connection: Any) -> Any:
        if value is None:
            return None
        return self.decode(decompress(bytes(value)))

    def to_python(self, value: Any) -> Any:
        # Django's deserializers (loaddata) hand over the text value_to_string wrote
        # (dumpdata): JSON, read back into the value. Nothing else gives this field text.
        if isinstance(value, str):
            return json.loads(value)
        return value

    def get_prep_value(self, value: Any) -> Any:
        if value is None:
            return None
        return compress(encode(value))

    def value_to_string(self, obj: Any) -> str:
        return json.dumps(self.value_from_object(obj))
