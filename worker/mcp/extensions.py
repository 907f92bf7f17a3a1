"""sessionq's own MCP request options, read from ``_meta["sessionq/..."]`` and never from
the five upstream schemas (which stay identical):

* ``sessionq/timeout_ms`` — the call's deadline (a positive integer; else ignored);
* ``sessionq/source_agent`` — a list of source agents (``dsh``, ``claude-code``,
  ``codex``): ``session_search`` looks only at the caller's visible sessions imported from
  them — the same filter as the embedded HTTP API's ``extensions.source_agent``
  (``worker.tools.source_agents``). It needs the store (``--data``); on another tool, or
  malformed, the call is ``INVALID_ARGS`` naming why.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from indexer.query.protocol import QueryService
from worker.contract.errors import INVALID_ARGS, HarnessError
from worker.tools.access import Caller
from worker.tools.source_agents import ExtensionError, parse_agents, restrict_arguments

TIMEOUT_META_KEY: Final = "sessionq/timeout_ms"
SOURCE_AGENT_META_KEY: Final = "sessionq/source_agent"


@dataclass(frozen=True, slots=True)
class Extensions:
    """The sessionq request options of one call; ``error`` says why they are unusable."""

    timeout_ms: int | None = None
    source_agents: frozenset[str] | None = None
    error: str | None = None


def read_extensions(meta: Mapping[str, Any] | None) -> Extensions:
    meta = meta or {}
    value = meta.get(TIMEOUT_META_KEY)
    usable = isinstance(value, int) and not isinstance(value, bool) and value > 0
    timeout_ms = value if usable else None
    if SOURCE_AGENT_META_KEY not in meta:
        return Extensions(timeout_ms)
    try:
        agents = parse_agents(meta[SOURCE_AGENT_META_KEY])
    except ExtensionError as exc:
        return Extensions(timeout_ms, error=str(exc).replace("extensions.", "_meta.sessionq/"))
    return Extensions(timeout_ms, agents)


async def restricted(
    ext: Extensions,
    service: QueryService | None,
    tool: str,
    arguments: Any,
    session_id: str,
) -> Any:
    """``arguments`` with the source-agent filter applied (unchanged without one)."""
    if ext.error is not None:
        raise HarnessError(f"invalid arguments: {ext.error}", INVALID_ARGS)
    if ext.source_agents is None:
        return arguments
    if service is None:
        raise HarnessError(
            f"invalid arguments: {SOURCE_AGENT_META_KEY} needs the store (--data)", INVALID_ARGS
        )
    try:
        return await restrict_arguments(
            service, tool, arguments, Caller(session_id), ext.source_agents
        )
    except ExtensionError as exc:
        message = str(exc).replace("extensions.", "_meta.sessionq/")
        raise HarnessError(f"invalid arguments: {message}", INVALID_ARGS) from exc
