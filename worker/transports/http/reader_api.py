"""The console's reader over HTTP: ``GET /v1/transcript`` and ``GET /v1/export``.

``/v1/transcript?caller=ID&session=ID[&from=N][&limit=N]``: a page of the session's
transcript (``worker.reader``), ``limit`` events at most (default ``PAGE_EVENTS``, up to
``RANGE_MAX``) from seq ``from``. ``/v1/export?caller=ID&session=ID[&subtree=1]``: the
session as Markdown (with its subagents).

Both follow the tools' rules for the caller (``worker.reader.pages``): the caller is
resolved (404 as in the tools), the target authorized before any read, a foreign
session answered as a missing one (404). At most ``MAX_READS`` reads run at once; the
rest wait their turn, at most ``MAX_WAITING`` of them (503 beyond), so a burst of
exports — the client gone or not: a read runs to its end — cannot take every thread of
the server or queue without bound.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from typing import Final, TypeVar

from starlette.requests import Request
from starlette.responses import Response

from indexer.errors import ErrorCode
from indexer.query.protocol import RANGE_MAX, QueryService
from worker.contract import boundary
from worker.contract.deadline import CancelToken
from worker.contract.errors import HarnessError
from worker.reader.pages import PAGE_EVENTS, Reader
from worker.tools.access import resolve_caller
from worker.transports.http.console_api import caller_of
from worker.web.asgi import Handler, ascii_int, error_reply, json_reply

__all__ = ["MAX_READS", "MAX_WAITING", "ReaderApi"]

MAX_READS: Final = 4
MAX_WAITING: Final = 16
_STATUS: Final = {  # a foreign session is answered as a missing one
    ErrorCode.SESSION_NOT_FOUND: 404,
    ErrorCode.UNAUTHORIZED: 404,
    ErrorCode.INVALID_WINDOW: 400,
}
_FILE_NAME: Final = re.compile(r"[^A-Za-z0-9._-]")
T = TypeVar("T")


def _number(request: Request, name: str, default: int, top: int) -> int | Response:
    """``?name=`` as ASCII digits (``ascii_int``) within 0..top."""
    text = request.query_params.get(name)
    if text is None or text == "":
        return default
    value = ascii_int(text)
    if value is None or value > top:
        return error_reply(400, "BAD_REQUEST", f"{name} must be an integer from 0 to {top}")
    return value


class ReaderApi:
    """The reader's routes over one query service."""

    def __init__(self, service: QueryService) -> None:
        self.service = service
        self._reads = asyncio.Semaphore(MAX_READS)
        self._waiting = 0

    def routes(self) -> dict[tuple[str, str], Handler]:
        return {
            ("GET", "/v1/transcript"): self._transcript_view,
            ("GET", "/v1/export"): self._export_view,
        }

    async def _read(self, request: Request, read: Callable[[Reader, str], T]) -> T | Response:
        """Resolve the caller, then ``read(reader, session)`` in a worker thread; the
        tools' errors as replies."""
        caller = caller_of(request)
        if isinstance(caller, Response):
            return caller
        session = request.query_params.get("session") or caller.session_id

        def run() -> T:
            resolved = resolve_caller(self.service, caller, CancelToken())
            return read(Reader(self.service, resolved), session)

        if self._reads.locked() and self._waiting >= MAX_WAITING:
            return error_reply(503, "BUSY", "too many transcript reads are waiting; try again")
        self._waiting += 1
        waiting = True
        try:
            async with self._reads:
                self._waiting, waiting = self._waiting - 1, False
                return await boundary.in_thread(run)
        except HarnessError as exc:
            return error_reply(_STATUS.get(exc.code, 500), exc.code, exc.message)
        finally:
            if waiting:  # cancelled before its turn came
                self._waiting -= 1

    async def _transcript_view(self, request: Request) -> Response:
        first = _number(request, "from", 0, (1 << 53) - 1)
        if isinstance(first, Response):
            return first
        limit = _number(request, "limit", PAGE_EVENTS, RANGE_MAX)
        if isinstance(limit, Response):
            return limit
        page = await self._read(request, lambda r, s: r.transcript(s, first, limit))
        return page if isinstance(page, Response) else json_reply(page)

    async def _export_view(self, request: Request) -> Response:
        subtree = request.query_params.get("subtree", "") in ("1", "true")
        text = await self._read(request, lambda r, s: r.export(s, subtree))
        if isinstance(text, Response):
            return text
        session = request.query_params.get("session") or request.query_params.get("caller", "")
        name = _FILE_NAME.sub("_", session)[:80] or "session"
        return Response(
            text,
            media_type="text/markdown; charset=utf-8",
            headers={
                "Content-Disposition": f'attachment; filename="{name}.md"',
                "X-Content-Type-Options": "nosniff",
                "Cache-Control": "no-store",
            },
        )
