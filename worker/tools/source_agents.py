"""The source-agent extension: restrict a search to sessions imported from given agents
(``dsh``, ``claude-code``, ``codex``) without touching the five upstream schemas.

Over ``POST /v1/call`` the body may carry ``"extensions": {"source_agent": [...]}``
beside the request envelope; ``GET /v1/sessions`` takes ``?source_agent=a,b``. The
filter only narrows what the tool already allows: it is resolved, in the caller's
workspace, to the ids of the matching sessions and intersected with the call's own
``session_ids`` argument, so authorization, ranking and the output text are the tool's
own. It applies to ``session_search`` (the only tool that searches across sessions);
the targeted tools take one session id the caller already names.

:func:`restrict_arguments` is the entry point for other front ends (the MCP server).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any, Final

from indexer.model.search import CwdFilter
from indexer.query.protocol import QueryService
from indexer.query.types import SessionRecord
from worker.contract import boundary
from worker.contract.deadline import CancelToken
from worker.contract.errors import HarnessError
from worker.tools.access import Caller, ResolvedCaller, record_authorized, resolve_caller

__all__ = [
    "EXTENSION_KEY",
    "NO_SESSION",
    "ExtensionError",
    "Extensions",
    "agents_of_query",
    "parse_agents",
    "restrict_arguments",
    "restrict_request",
    "take_extensions",
]

EXTENSION_KEY: Final = "source_agent"
SEARCH_TOOL: Final = "session_search"
MAX_AGENTS: Final = 16
# A session id reserved for this: an empty intersection still runs the search (whose
# text then says it found nothing) instead of failing on an empty ``session_ids``.
NO_SESSION: Final = "sessionq:no-such-session"


class ExtensionError(ValueError):
    """An ``extensions`` value that cannot be used; the message says why (HTTP 400)."""


@dataclass(frozen=True, slots=True)
class Extensions:
    """What a call's ``extensions`` asked for; ``error`` is why they cannot be used."""

    source_agents: frozenset[str] | None = None
    error: str | None = None


def parse_agents(value: Any) -> frozenset[str]:
    """A source-agent filter value (1 to MAX_AGENTS names), or ExtensionError."""
    if (
        not isinstance(value, list)
        or not value
        or len(value) > MAX_AGENTS
        or not all(isinstance(v, str) and v for v in value)
    ):
        raise ExtensionError(
            f"extensions.{EXTENSION_KEY} must be a list of 1 to {MAX_AGENTS} agent names"
        )
    return frozenset(value)


def take_extensions(body: Any) -> tuple[Any, Extensions]:
    """Split ``extensions`` off a ``/v1/call`` body; the rest is the request envelope.
    A malformed value is kept as ``error``: :func:`restrict_request` raises it once the
    envelope itself was found valid."""
    if not isinstance(body, dict) or "extensions" not in body:
        return body, Extensions()
    rest = {k: v for k, v in body.items() if k != "extensions"}
    ext = body["extensions"]
    try:
        if not isinstance(ext, dict):
            raise ExtensionError("extensions must be an object")
        unknown = sorted(k for k in ext if k != EXTENSION_KEY)
        if unknown:
            raise ExtensionError(f"unknown extension {unknown[0]!r}; known: {EXTENSION_KEY}")
        agents = parse_agents(ext[EXTENSION_KEY]) if EXTENSION_KEY in ext else None
    except ExtensionError as exc:
        return rest, Extensions(error=str(exc))
    return rest, Extensions(agents)


def agents_of_query(query: Mapping[str, str]) -> frozenset[str] | None:
    """``?source_agent=claude-code,codex`` of ``/v1/sessions`` (absent: no filter)."""
    text = query.get(EXTENSION_KEY)
    if text is None:
        return None
    return parse_agents([part.strip() for part in text.split(",")])


async def restrict_arguments(
    service: QueryService,
    tool: str,
    arguments: Any,
    caller: Caller | None,
    agents: Collection[str],
    token: CancelToken | None = None,
) -> Any:
    """``arguments`` of a ``session_search`` call narrowed to sessions of ``agents``.

    Order: (1) only ``session_search`` takes the filter (else :class:`ExtensionError`);
    (2) arguments that are not an object, or a caller that cannot be resolved, are
    returned unchanged: the tool reports those itself; (3) the caller's visible
    sessions (its workspace, or itself without one) whose source agent is in
    ``agents`` become ``session_ids``, intersected with the ones the call gave, in their
    order; none left is :data:`NO_SESSION`.
    """
    if tool != SEARCH_TOOL:
        raise ExtensionError(f"extensions.{EXTENSION_KEY} applies to {SEARCH_TOOL} only")
    given = arguments.get("session_ids") if isinstance(arguments, dict) else None
    malformed = given is not None and not (
        isinstance(given, list) and all(isinstance(v, str) for v in given)
    )
    if not isinstance(arguments, dict) or caller is None or malformed:
        return arguments
    token = token if token is not None else CancelToken()
    try:
        resolved, records = await boundary.in_thread(
            lambda: _visible_records(service, caller, token)
        )
    except HarnessError:  # not lost: the pipeline answers this caller with the same error
        return arguments
    wanted = set(agents)
    allowed = [
        r.header.id for r in records if record_authorized(r, resolved) and r.header.agent in wanted
    ]
    if isinstance(given, list):
        keep = set(allowed)
        allowed = [v for v in given if v in keep]
    return {**arguments, "session_ids": allowed or [NO_SESSION]}


def _visible_records(
    service: QueryService, caller: Caller, token: CancelToken
) -> tuple[ResolvedCaller, list[SessionRecord]]:
    """The resolved caller and the sessions of its workspace (itself without one)."""
    resolved = resolve_caller(service, caller, token)
    cwd = resolved.header.cwd
    if cwd is None:
        own = boundary.call(token, "caller lookup", lambda: service.get_session(resolved.id))
        return resolved, [] if own is None else [own]
    records = boundary.call(
        token, "workspace listing", lambda: service.filter_sessions([CwdFilter((cwd,))])
    )
    return resolved, records


async def restrict_request(
    service: QueryService, tool: str, arguments: Any, caller: Caller | None, extensions: Extensions
) -> Any:
    """A call's ``arguments`` narrowed by its extensions (HTTP front end); raises
    :class:`ExtensionError` for extensions that cannot be used."""
    if extensions.error is not None:
        raise ExtensionError(extensions.error)
    if extensions.source_agents is None:
        return arguments
    return await restrict_arguments(service, tool, arguments, caller, extensions.source_agents)
