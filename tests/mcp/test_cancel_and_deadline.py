"""Cancellation and deadlines over MCP: the SDK client's cancel reaches the pipeline's
``CancelToken``; ``_meta["sessionq/timeout_ms"]`` is the call's deadline, reported as
progress while the call runs."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterator
from pathlib import Path

from tests.fixtures.mcp import CALLER, CliReply
from tests.fixtures.waiting import wait_until
from tests.mcp.inprocess import embedded, mcp_client, window
from tests.mcp.test_transports import as_reply
from worker.transports.mcp.extensions import TIMEOUT_META_KEY


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@contextlib.contextmanager
def mcp_log() -> Iterator[Callable[[], list[str]]]:
    logger = logging.getLogger("sessionq.mcp")
    handler, level = _Records(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield lambda: handler.messages
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


async def test_a_cancelled_mcp_request_cancels_the_pipeline_call(corpus_data: Path) -> None:
    backend = embedded(corpus_data)
    with mcp_log() as messages:
        async with mcp_client(backend, window(CALLER)) as client:
            # The caller's exclusive gate is taken: the search waits inside the pipeline.
            async with backend.pipeline.admission.gates.run(CALLER, exclusive=True):
                call = asyncio.create_task(client.call_tool("session_search", {"query": "PONG"}))
                await wait_until(lambda: backend.running == 1, timeout=30, what="the call")
                call.cancel()  # the SDK client sends notifications/cancelled
                with contextlib.suppress(asyncio.CancelledError):
                    await call
                await wait_until(lambda: backend.cancelled == 1, timeout=30, what="the cancel")
                assert backend.running == 1  # cancelled, not answered: parked at the gate
            await wait_until(lambda: backend.running == 0, timeout=30, what="the call to end")
            # The connection is still usable afterwards.
            after = as_reply(await client.call_tool("session_search", {"query": "PONG"}))
            assert after.ok
    ended = [m for m in messages() if m.startswith("cancelled MCP call")]
    assert len(ended) == 1 and ended[0].endswith("ended: TOOL_CANCELLED"), messages()


async def test_the_timeout_meta_is_the_deadline_and_progress_shows_it(corpus_data: Path) -> None:
    backend = embedded(corpus_data)
    progress: list[tuple[float, float | None]] = []

    async def on_progress(done: float, total: float | None, _message: str | None) -> None:
        progress.append((done, total))

    async with mcp_client(backend, window(CALLER)) as client:
        async with backend.pipeline.admission.gates.run(CALLER, exclusive=True):
            call = asyncio.create_task(
                client.call_tool(
                    "session_search",
                    {"query": "PONG"},
                    progress_callback=on_progress,
                    meta={TIMEOUT_META_KEY: 300},
                )
            )
            await wait_until(lambda: bool(progress), timeout=30, what="a progress report")
        reply = as_reply(await call)
    assert reply == CliReply(False, "TOOL_TIMEOUT: tool call timed out after 300ms")
    assert progress[0][1] == 300.0 and 0 < progress[0][0] <= 300.0
