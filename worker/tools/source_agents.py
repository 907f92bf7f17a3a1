"""The source-agent extension: restrict a search to sessions imported from given agents
(``dsh``, ``claude-code``, ``codex``) without touching the five upstream schemas.

Over ``POST /v1/call`` the body may carry ``"extensions": {"source_agent": [...]}``
beside the request envelope; ``GET /v1/sessions`` takes ``?source_agent=a,b``. The
filter only narrows what the tool already allows: it is resolved, in the caller's
workspace, to the ids of the matching sessions and intersected with the call's own
``session_ids`` argument, so authorization, ranking and the output text are the tool's
own. It applies to ``session_search`` (the only tool that searches across sessions);
the targeted tools take one session id the caller already names.

A transport decodes the filter (``take_extensions``, ``parse_agents``, ``require_search``)
and hands it to the pipeline as a call option; ``session_search`` applies it
(``agent_session_ids``). A pipeline reached over Kafka takes no call options: a host
holding a replica narrows the call's ``session_ids`` with it before sending
(``narrowed_arguments``).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any, Final

from indexer.query.protocol import QueryService
from worker.contract.deadline import CancelToken
from worker.contract.errors import HarnessError
from worker.tools.access import Caller, ResolvedCaller, resolve_caller, workspace_records

__all__ = [
    "EXTENSION_KEY",
    "NO_SESSION",
    "ExtensionError",
    "Extensions",
    "agent_session_ids",
    "agents_of_query",
    "narrowed_arguments",
    "parse_agents",
    "require_search",
    "take_extensions",
]

EXTENSION_KEY: Final = "source_agent"
EXTENSION_NAME: Final = f"extensions.{EXTENSION_KEY}"
"""How the HTTP API's errors name the option; another transport passes its own name."""
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


def parse_agents(value: Any, name: str = EXTENSION_NAME) -> frozenset[str]:
    """A source-agent filter value (1 to MAX_AGENTS names), or ExtensionError."""
    if (
        not isinstance(value, list)
        or not value
        or len(value) > MAX_AGENTS
        or not all(isinstance(v, str) and v for v in value)
    ):
        raise ExtensionError(f"{name} must be a list of 1 to {MAX_AGENTS} agent names")
    return frozenset(value)


def take_extensions(body: Any) -> tuple[Any, Extensions]:
    """Split ``extensions`` off a ``/v1/call`` body; the rest is the request envelope.
    A malformed value is kept as ``error``: the transport answers it once the envelope
    itself was found valid."""
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


def require_search(tool: str, name: str = EXTENSION_NAME) -> None:
    """The filter narrows ``session_search`` only: any other tool is an
    :class:`ExtensionError` (the transport's decode step says so in its own form)."""
    if tool != SEARCH_TOOL:
        raise ExtensionError(f"{name} applies to {SEARCH_TOOL} only")


def agent_session_ids(
    service: QueryService, caller: ResolvedCaller, agents: Collection[str], token: CancelToken
) -> tuple[str, ...]:
    """The sessions of ``caller``'s workspace it may see whose source agent is one of
    ``agents`` (``session_search`` intersects its own filters with them, inside the call:
    under its deadline, its cancel and its admission); none is ``(NO_SESSION,)``."""
    wanted = set(agents)
    records = workspace_records(service, caller, token)
    return tuple(r.header.id for r in records if r.header.agent in wanted) or (NO_SESSION,)


def narrowed_arguments(
    service: QueryService,
    caller: Caller,
    arguments: Any,
    agents: Collection[str],
    token: CancelToken,
) -> Any:
    """``session_search``'s ``arguments`` with ``session_ids`` narrowed to the sessions
    ``agent_session_ids`` finds in ``service`` (a replica), intersected with the ones the
    call gave, in their order. Arguments the tool will refuse go unchanged (the tool says
    why); a caller the replica does not know narrows to ``NO_SESSION``: the filter is
    never dropped."""
    given = arguments.get("session_ids") if isinstance(arguments, dict) else None
    malformed = given is not None and not (
        isinstance(given, list) and all(isinstance(v, str) for v in given)
    )
    if not isinstance(arguments, dict) or malformed:
        return arguments
    try:
        resolved = resolve_caller(service, caller, token)
    except HarnessError:
        return {**arguments, "session_ids": [NO_SESSION]}
    allowed = agent_session_ids(service, resolved, agents, token)
    if given is not None:
        keep = set(allowed)
        allowed = tuple(v for v in given if v in keep) or (NO_SESSION,)
    return {**arguments, "session_ids": list(allowed)}
