"""Caller binding: every MCP connection speaks for exactly one caller session.

An agent's MCP client cannot say which session is calling (the tools' arguments are the
model's), so the server decides, once per connection, in this order:

1. ``--caller`` / ``SESSIONQ_CALLER``, set by the agent's launcher (the MCP config's
   ``env``); every connection is that caller;
2. else discovery over the store: the directories are the client's roots (``file://``
   URIs, when the client offers the roots capability) or else the server process's
   working directory; the caller is a session whose ``cwd`` equals one of them exactly
   (the tools' workspace rule): a main session before a subagent (one with a
   ``parentSession``: an agent's MCP server belongs to the agent the user talks to,
   while its subagents' logs are often newer), then one its host has open (``live``)
   before a closed one, then the latest ``createdAt``, then the greatest id.

The first tool call of a connection binds it (an agent's own log may appear only after
it started its MCP server); later calls reuse the binding. No match is a clear tool
error naming the directories and how to set the caller.
"""

from __future__ import annotations

import asyncio
import logging
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final
from urllib.parse import unquote, urlparse

from indexer.model.search import CwdFilter
from indexer.query.protocol import QueryService
from indexer.query.types import SessionRecord
from worker.contract.errors import MISSING_AGENT, HarnessError

log = logging.getLogger("sessionq.mcp")
MAX_BOUND_CONNECTIONS: Final = 4096  # an HTTP server forgets the oldest bindings past this


@dataclass(frozen=True, slots=True)
class BoundCaller:
    """The caller a connection speaks for; ``workspace`` is its cwd when known (a signing
    Kafka backend vouches for it in the caller token)."""

    session_id: str
    workspace: str | None = None


class BindingError(HarnessError):
    """No caller session could be bound to the connection (shown as a tool error)."""

    code = MISSING_AGENT


def newest_in(records: Sequence[SessionRecord]) -> SessionRecord | None:
    """The discovery order of the module docstring: main before subagent, then live,
    then newest, then id."""
    if not records:
        return None
    return max(
        records,
        key=lambda r: (r.header.parent_session is None, r.live, r.header.created_at, r.header.id),
    )


def root_dirs(uris: Sequence[str]) -> list[str]:
    """The local directories of ``file://`` root URIs (other schemes are ignored)."""
    out: list[str] = []
    for uri in uris:
        parsed = urlparse(uri)
        if parsed.scheme == "file" and parsed.path:
            out.append(unquote(parsed.path).rstrip("/") or "/")
    return out


class CallerBinder:
    """Binds connections to callers (module docstring); one per server process."""

    def __init__(
        self,
        caller: str | None,
        *,
        workspace: str | None = None,
        cwd: Path | None = None,
    ) -> None:
        self.caller = caller
        self.workspace = workspace
        self.cwd = str(cwd if cwd is not None else Path.cwd())
        self._bound: dict[str, BoundCaller] = {}
        self._lock = asyncio.Lock()

    async def bind(
        self, connection: str | None, service: QueryService | None, ctx: Any = None
    ) -> BoundCaller:
        """The caller of ``connection`` (None: a connectionless request, bound alone);
        ``ctx`` is the SDK's request context, asked for the client's roots."""
        if self.caller is not None:
            return await self._explicit(service)
        if connection is not None and connection in self._bound:
            return self._bound[connection]
        async with self._lock:
            if connection is not None and connection in self._bound:
                return self._bound[connection]
            bound = await self._discover(service, await client_roots(ctx))
            if connection is not None:
                if len(self._bound) >= MAX_BOUND_CONNECTIONS:
                    self._bound.pop(next(iter(self._bound)))
                self._bound[connection] = bound
            return bound

    async def _explicit(self, service: QueryService | None) -> BoundCaller:
        assert self.caller is not None
        if self.workspace is not None or service is None:
            return BoundCaller(self.caller, self.workspace)
        record = await asyncio.to_thread(service.get_session, self.caller)
        return BoundCaller(self.caller, record.header.cwd if record is not None else None)

    async def _discover(self, service: QueryService | None, roots: list[str]) -> BoundCaller:
        dirs = roots or [self.cwd]
        where = ", ".join(dirs)
        if service is None:
            raise BindingError(
                "no caller session: set SESSIONQ_CALLER (or --caller) in the MCP server's"
                " configuration, or give --data so the caller can be found by its working"
                f" directory ({where})"
            )
        records = await asyncio.to_thread(
            service.filter_sessions, [CwdFilter(tuple[str | None, ...](dirs))]
        )
        found = newest_in(records)
        if found is None:
            raise BindingError(
                f"no caller session: no session in the store has its cwd in {where};"
                " set SESSIONQ_CALLER (or --caller) in the MCP server's configuration"
            )
        return BoundCaller(found.header.id, found.header.cwd)


async def client_roots(ctx: Any) -> list[str]:
    """The client's root directories, when it offers the roots capability on a
    connection that can carry a server request; else none (the process cwd is used)."""
    session = getattr(ctx, "session", None)
    if session is None:
        return []
    capabilities = session.client_capabilities
    if capabilities is None or capabilities.roots is None or not session.can_send_request:
        return []
    try:
        with warnings.catch_warnings():  # roots are deprecated in the newest protocol only
            warnings.simplefilter("ignore")
            result = await session.list_roots()
    except Exception as exc:  # a client that fails the request: the process cwd is used
        log.warning("the MCP client's roots/list failed (%s); using the server's cwd", exc)
        return []
    return root_dirs([str(root.uri) for root in result.roots])
