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
from worker.tools.source_agents import ExtensionError, parse_agents, require_search

TIMEOUT_META_KEY: Final = "sessionq/timeout_ms"
SOURCE_AGENT_META_KEY: Final = "sessionq/source_agent"
SOURCE_AGENT_NAME: Final = f"_meta.{SOURCE_AGENT_META_KEY}"  # how errors name it


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
        agents = parse_agents(meta[SOURCE_AGENT_META_KEY], SOURCE_AGENT_NAME)
    except ExtensionError as exc:
        return Extensions(timeout_ms, error=str(exc))
    return Extensions(timeout_ms, agents)


def check_extensions(ext: Extensions, service: QueryService | None, tool: str) -> None:
    """Why ``ext`` cannot be used for this call, as ``INVALID_ARGS`` (the filter itself
    runs inside the call: ``session_search``, ``worker.tools.source_agents``)."""
    if ext.error is not None:
        raise HarnessError(f"invalid arguments: {ext.error}", INVALID_ARGS)
    if ext.source_agents is None:
        return
    if service is None:
        raise HarnessError(
            f"invalid arguments: {SOURCE_AGENT_META_KEY} needs the store (--data)", INVALID_ARGS
        )
    try:
        require_search(tool, SOURCE_AGENT_NAME)
    except ExtensionError as exc:
        raise HarnessError(f"invalid arguments: {exc}", INVALID_ARGS) from exc
