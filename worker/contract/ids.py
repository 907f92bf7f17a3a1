"""Request ids for calls whose sender gave none (``POST /v1/call`` without ``id``)."""

from __future__ import annotations

import os
import uuid
from typing import Final

POOL_IDS: Final = 256


class RequestIds:
    """Random (version 4) UUIDs, drawn from the OS's randomness ``POOL_IDS`` at a time:
    one ``getrandom`` call per id cost a ``serve`` call about 8 µs of CPU
    (``bench/README.md``). Not thread-safe: one per event loop."""

    __slots__ = ("_at", "_pool")

    def __init__(self) -> None:
        self._pool = b""
        self._at = 0

    def new(self) -> str:
        at = self._at
        if at >= len(self._pool):
            self._pool, at = os.urandom(16 * POOL_IDS), 0
        self._at = at + 16
        return str(uuid.UUID(bytes=self._pool[at : at + 16], version=4))
