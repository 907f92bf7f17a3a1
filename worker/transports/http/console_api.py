"""What the console of ``sessionq serve`` reads besides the tools: whom to call as, and
the caller's workspace.

``GET /v1/callers`` lists the sessions a user may pick as the console's caller: at most
``MAX_CALLERS`` of the whole store, main sessions before subagents, live before closed,
newest first (the order ``sessionq mcp`` discovers a caller in); the first is the page's
default. It answers whoever may use this API at all — ``serve`` is the local user's own
API (loopback under the DNS-rebinding rule, or the bearer token), and that user names
any session as caller in ``POST /v1/call`` already; the list only saves finding an id.

``GET /v1/sessions?caller=ID`` is the caller's workspace under the tools' rule (same
``cwd``; a caller without one sees only itself), at most ``MAX_LISTED_SESSIONS``, a
foreign parent masked as the tools mask it. Every tool answer keeps the workspace rule:
nothing here widens what ``/v1/call`` shows.

Order of a request: parse the query (400), resolve the caller (404 as in the tools),
read the records, then their titles and step positions in one thread hop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, Final

from starlette.requests import Request
from starlette.responses import Response

from indexer.query.protocol import QueryService
from indexer.query.types import SessionRecord
from worker.contract import boundary
from worker.contract.deadline import CancelToken
from worker.contract.errors import SESSION_NOT_FOUND, HarnessError
from worker.tools import source_agents as ext
from worker.tools.access import (
    Caller,
    ResolvedCaller,
    authorize_session_ids,
    record_authorized,
    resolve_caller,
    visible_titles,
    workspace_records,
)
from worker.tools.render import shown_parent
from worker.web.asgi import Handler, ascii_int, error_reply, json_reply

MAX_CALLERS: Final = 200
MAX_LISTED_SESSIONS: Final = 500


def caller_of(request: Request) -> Caller | Response:
    """``?caller=ID[&step_seq=N]``, or the 400 that says what is missing."""
    session_id = request.query_params.get("caller", "")
    if not session_id:
        missing = "caller is required: /v1/sessions?caller=<session id>"
        return error_reply(400, "BAD_REQUEST", missing)
    step_text = request.query_params.get("step_seq")
    if step_text is None or step_text == "":
        return Caller(session_id)
    step_seq = ascii_int(step_text)
    if step_seq is None:
        return error_reply(400, "BAD_REQUEST", "step_seq must be a non-negative integer")
    return Caller(session_id, step_seq)


class ConsoleApi:
    """``/v1/callers`` and ``/v1/sessions`` over one query service."""

    def __init__(self, service: QueryService) -> None:
        self.service = service

    def routes(self) -> dict[tuple[str, str], Handler]:
        return {
            ("GET", "/v1/callers"): self._callers_view,
            ("GET", "/v1/sessions"): self._sessions_view,
        }

    # ---- /v1/callers ------------------------------------------------------------------------
    async def _callers_view(self, _: Request) -> Response:
        records = await asyncio.to_thread(self.service.recent_sessions, MAX_CALLERS + 1)
        shown = records[:MAX_CALLERS]
        titles = await asyncio.to_thread(self._titles, [r.header.id for r in shown], None)
        return json_reply(
            {
                "callers": [
                    {
                        "id": r.header.id,
                        "cwd": r.header.cwd,
                        "title": titles.get(r.header.id),
                        "source_agent": r.header.agent,
                        "created_at": r.header.created_at,
                        "live": r.live,
                        "subagent": r.header.parent_session is not None,
                    }
                    for r in shown
                ],
                "more": len(records) > MAX_CALLERS,
            }
        )

    # ---- /v1/sessions -----------------------------------------------------------------------
    async def _visible_sessions(self, caller: ResolvedCaller) -> list[SessionRecord]:
        """The sessions the caller may see: the tools' workspace rule (same ``cwd``; a
        caller without one sees only itself)."""
        token = CancelToken()
        if caller.header.cwd is None:
            own = await boundary.in_thread(
                lambda: boundary.call(
                    token, "caller session listing", lambda: self.service.get_session(caller.id)
                )
            )
            records = [] if own is None else [own]
            return [r for r in records if record_authorized(r, caller)]
        records = await boundary.in_thread(
            lambda: workspace_records(self.service, caller, token, what="workspace session listing")
        )
        return records[:MAX_LISTED_SESSIONS]

    async def _sessions_view(self, request: Request) -> Response:
        caller = caller_of(request)
        if isinstance(caller, Response):
            return caller
        try:
            agents = ext.agents_of_query(request.query_params)
            resolved = await boundary.in_thread(
                lambda: resolve_caller(self.service, caller, CancelToken())
            )
            records = await self._visible_sessions(resolved)
            records = [r for r in records if agents is None or r.header.agent in agents]
        except ext.ExtensionError as exc:
            return error_reply(400, "BAD_REQUEST", str(exc))
        except HarnessError as exc:
            return error_reply(404 if exc.code == SESSION_NOT_FOUND else 500, exc.code, exc.message)
        parents = [r.header.parent_session for r in records if r.header.parent_session]
        shown = await boundary.in_thread(
            lambda: authorize_session_ids(self.service, resolved, parents, CancelToken())
        )
        ids = [r.header.id for r in records]
        titles, seqs = await asyncio.to_thread(self._titles_and_seqs, ids, resolved)
        return json_reply(
            [
                {
                    "id": r.header.id,
                    "cwd": r.header.cwd,
                    "parent": shown_parent(r.header.parent_session, shown),
                    "created_at": r.header.created_at,
                    "source_agent": r.header.agent,
                    "title": titles.get(r.header.id),
                    "live": r.live,
                    "last_step_seq": seqs[r.header.id][0],
                    "last_seq": seqs[r.header.id][1],
                }
                for r in records
            ]
        )

    # ---- reads (in a worker thread) ---------------------------------------------------------
    def _titles(self, ids: Sequence[str], caller: ResolvedCaller | None) -> dict[str, Any]:
        return visible_titles(self.service, ids, caller)

    def _titles_and_seqs(
        self, ids: Sequence[str], caller: ResolvedCaller
    ) -> tuple[dict[str, Any], dict[str, tuple[int | None, int | None]]]:
        seqs = {i: (self.service.last_step_start_seq(i), self.service.last_seq(i)) for i in ids}
        return self._titles(ids, caller), seqs
