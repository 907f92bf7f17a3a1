"""Waiting in the Kafka tests: poll a condition until a deadline, never a fixed sleep."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable


async def wait_until(
    condition: Callable[[], Awaitable[bool] | bool],
    *,
    timeout: float,
    what: str,
    interval: float = 0.05,
) -> float:
    """Poll ``condition`` until it holds; returns the seconds it took, fails after ``timeout``."""
    loop = asyncio.get_running_loop()
    started = loop.time()
    while True:
        result = condition()
        if not isinstance(result, bool):
            result = await result
        if result:
            return loop.time() - started
        if loop.time() - started > timeout:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(interval)
