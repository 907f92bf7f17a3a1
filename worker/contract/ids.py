"""Request ids for calls whose sender gave none (``POST /v1/call`` without ``id``)."""

from __future__ import annotations

import os
from typing import Final

POOL_IDS: Final = 256


class RequestIds:
    """Random (version 4) UUIDs, drawn from the OS's randomness ``POOL_IDS`` at a time
    (one system call per id is a measurable share of a call's CPU, ``bench/README.md``),
    each spelled from its bytes' hex (what ``str(UUID)`` prints, without building a
    ``UUID``). Not thread-safe: one per event loop."""

    __slots__ = ("_at", "_pool")

    def __init__(self) -> None:
        self._pool = b""
        self._at = 0

    def new(self) -> str:
        at = self._at
        if at >= len(self._pool):
            self._pool, at = os.urandom(16 * POOL_IDS), 0
        self._at = at + 16
        raw = bytearray(self._pool[at : at + 16])
        raw[6] = (raw[6] & 0x0F) | 0x40  # version 4
        raw[8] = (raw[8] & 0x3F) | 0x80  # the RFC 4122 variant
        h = raw.hex()
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
