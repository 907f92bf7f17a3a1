"""Read-your-writes (step 4 of ``worker.calls.pipeline``): a call waits until its caller's log
is applied through the seq the host last published (``min_seq``), or, over Kafka, until
the caller exists at all; the call's deadline or a cancel ends the wait with its own
reply.

``last_seq`` is one primary-key lookup, cheaper than a thread hand-off, so it runs on the
loop; only the waiting sleeps, a little longer each time (a caller that never comes must
not cost a lookup every 10 ms until its deadline).
"""

from __future__ import annotations

import asyncio
from typing import Final

from indexer.query.protocol import QueryService
from worker.contract.deadline import CancelToken

RYW_POLL_S: Final = 0.01  # first poll of a waiting call; the interval grows to RYW_POLL_MAX_S
RYW_POLL_MAX_S: Final = 0.25


async def applied_through(
    service: QueryService, session_id: str, min_seq: int | None, token: CancelToken
) -> None:
    """Return once ``service`` holds ``session_id`` through ``min_seq`` (None: holds it
    at all); ``token.check()`` raises the call's abort meanwhile."""
    target = min_seq if min_seq is not None else -1
    interval = RYW_POLL_S
    while True:
        last = service.last_seq(session_id)
        if last is not None and last >= target:
            return
        token.check()
        await asyncio.sleep(interval)
        interval = min(RYW_POLL_MAX_S, interval * 1.5)
