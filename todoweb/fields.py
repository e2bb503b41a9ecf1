"""CompressedJSONField: JSON kept zlib-compressed, for the large values every revision
stores (its plan, its call's input, the first answer kept for replays).

A 10-step TodoWrite's answer is 4.7 KB of JSON and about 1 KB compressed, its plan
3.1 KB and 0.45 KB: compressed, a revision stores a third to a half of what it did. Values read back are
the same Python objects (the JSON's key order kept, on PostgreSQL too). Not for
querying into: the database sees bytes.

Compression is tuned for values of a few KB: level 1 with an 8 KB window and little
memory costs 15 µs for 4 KB (the defaults cost 120 µs, most of it setting up a 256 KB
state) and compresses as well; any zlib stream is read back whatever its window.
"""

from __future__ import annotations

import json
import zlib
from typing import Any

import orjson
from django.db import models

LEVEL, WINDOW_BITS, MEMORY_LEVEL = 1, 13, 4


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


class CompressedJSONField(models.BinaryField):
    """`wide_integers=False`: the values are todoweb's own (a plan's steps), which hold
    no integer beyond 64 bits, and are read with orjson (4x faster than json for a
    10-step plan). An agent's input and an answer that quotes it may hold one."""

    description = "JSON, zlib-compressed"

    def __init__(self, *args: Any, wide_integers: bool = True, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Not a column property: left out of deconstruct(), so migrations do not see it.
        self.decode = decode if wide_integers else orjson.loads

    def from_db_value(self, value: Any, expression: Any, connection: Any) -> Any:
        if value is None:
            return None
        return self.decode(zlib.decompress(value))

    def to_python(self, value: Any) -> Any:
        return value

    def get_prep_value(self, value: Any) -> Any:
        if value is None:
            return None
        compressor = zlib.compressobj(LEVEL, zlib.DEFLATED, WINDOW_BITS, MEMORY_LEVEL)
        return compressor.compress(encode(value)) + compressor.flush()

    def value_to_string(self, obj: Any) -> str:
        return json.dumps(self.value_from_object(obj))
