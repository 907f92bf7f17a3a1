"""The tool pipeline: one request in, exactly one reply out (SPEC §9, DESIGN "worker").

``ToolService.call`` reads top to bottom: deadline → arguments → caller →
authorization → query → rendering → reply. Arguments come before the caller because
upstream validates them first (the runtime checks the schema before the tool runs, and
``session_event_trace``/``session_event_read`` check ``seq`` before resolving the
caller). Authorization, queries and rendering are each tool's own steps (SPEC §9.8).
No exception escapes ``call``: tool-owned errors reply verbatim, cancellation replies
with its reason, anything else is sanitized to ``SESSION_QUERY_TOOL_FAILED``.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field, field_validator

from indexer.query.protocol import QueryService
from worker import boundary
from worker.auth import Caller, ResolvedCaller, resolve_caller
from worker.deadline import CancelToken, Deadline
from worker.errors import HarnessError, ToolAbortError, ToolFailure
from worker.input import (
    PROMPT_TEXT,
    TOOL_DEFINITIONS,
    EventReadArgs,
    EventSearchArgs,
    EventTraceArgs,
    SessionSearchArgs,
    SessionTraceArgs,
    ToolArgs,
    parse_arguments,
)
from worker.jsjson import js_stringify
from worker.tools import event_read, event_search, event_trace, session_search, session_trace

__all__ = ["Caller", "ToolReply", "ToolService", "ToolServiceConfig"]

MAX_SAFE_INTEGER: Final = 9007199254740991
MAX_TIMER_DELAY_MS: Final = 2147483647
PROMPT_SECTION_NAME: Final = "tool:session-query"
PROMPT_SECTION_ORDER: Final = 113
SEARCH_TOOLS: Final = frozenset({"session_search", "session_event_search"})
_PASSTHROUGH: Final = (asyncio.CancelledError, KeyboardInterrupt, SystemExit, GeneratorExit)


def _is_js_integer(value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return isinstance(value, int) or value.is_integer()


class ToolServiceConfig(BaseModel):
    """Deployment bounds of the tools (SPEC §11.3); invalid values raise ``TypeError``."""

    model_config = ConfigDict(frozen=True, populate_by_name=True, extra="forbid")

    max_search_results: int = Field(default=100, alias="maxSearchResults")
    search_timeout_ms: int = Field(default=30000, alias="searchTimeoutMs")

    @field_validator("max_search_results", mode="before")
    @classmethod
    def _check_max_search_results(cls, value: Any) -> int:
        if not _is_js_integer(value) or not 1 <= value <= MAX_SAFE_INTEGER:
            raise TypeError("tool-session-query: maxSearchResults must be a positive safe integer")
        return int(value)

    @field_validator("search_timeout_ms", mode="before")
    @classmethod
    def _check_search_timeout_ms(cls, value: Any) -> int:
        if not _is_js_integer(value) or not 1 <= value <= MAX_TIMER_DELAY_MS:
            raise TypeError(
                "tool-session-query: searchTimeoutMs must be a positive integer no greater than "
                f"{MAX_TIMER_DELAY_MS}"
            )
        return int(value)


@dataclass(frozen=True, slots=True)
class ToolReply:
    """The one reply of a call: ``output`` text, or an ``error`` (plus a cancel's raw reason)."""

    output: str | None = None
    error: ToolFailure | None = None
    cancel_reason: Any = None

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def text(self) -> str:
        """The single text block the model receives (``Error: <message>`` on failure)."""
        if self.error is not None:
            return self.error.text
        return self.output or ""


def _budget_ms(config: ToolServiceConfig, tool: object) -> int | None:
    """The tool's own timeout: ``searchTimeoutMs`` for the two search tools, else none."""
    is_search = isinstance(tool, str) and tool in SEARCH_TOOLS
    return config.search_timeout_ms if is_search else None


def manifest(config: ToolServiceConfig | None = None) -> dict[str, Any]:
    """The prompt section and the five tool definitions, in registration order."""
    cfg = config if config is not None else ToolServiceConfig()
    tools = [
        {
            "name": definition["name"],
            "description": definition["description"],
            "parameters": definition["parameters"],
            "execution_mode": "exclusive" if definition["name"] in SEARCH_TOOLS else "parallel",
            "timeout_ms": _budget_ms(cfg, definition["name"]),
        }
        for definition in TOOL_DEFINITIONS
    ]
    return {
        "prompt_section": {
            "name": PROMPT_SECTION_NAME,
            "order": PROMPT_SECTION_ORDER,
            "text": PROMPT_TEXT,
        },
        "tools": tools,
    }


def manifest_json(config: ToolServiceConfig | None = None) -> str:
    """``manifest()`` as 2-space JSON, byte-stable for a given configuration (hosts cache
    the prompt prefix)."""
    return js_stringify(manifest(config), 2)


class ToolService:
    """The five session-query tools over one ``QueryService``."""

    def __init__(self, service: QueryService, config: ToolServiceConfig | None = None) -> None:
        self.service = service
        self.config = config if config is not None else ToolServiceConfig()

    # ---- registration -------------------------------------------------------------------------
    def budget_ms(self, tool: str) -> int | None:
        return _budget_ms(self.config, tool)

    def manifest(self) -> dict[str, Any]:
        return manifest(self.config)

    def manifest_json(self) -> str:
        return manifest_json(self.config)

    # ---- execution ----------------------------------------------------------------------------
    def _token(
        self,
        tool: str,
        timeout_ms: int | None,
        token: CancelToken | None,
        deadline: Deadline | None,
    ) -> CancelToken:
        """The call's token: the caller's cancellation plus this call's deadline.

        An explicit ``deadline`` wins; else ``timeout_ms`` (capped at ``searchTimeoutMs``
        for the search tools); else the tool's own budget. A ``timeout_ms`` that is not an
        int is ignored, so building the token cannot fail.
        """
        if deadline is None:
            budget = self.budget_ms(tool)
            if isinstance(timeout_ms, int) and not isinstance(timeout_ms, bool):
                budget = timeout_ms if budget is None else min(timeout_ms, budget)
            deadline = None if budget is None else Deadline.after(budget)
        parent = token if isinstance(token, CancelToken) else CancelToken()
        return parent.child(deadline)

    async def call(
        self,
        tool: str,
        arguments: Any,
        caller: Caller | None,
        *,
        timeout_ms: int | None = None,
        token: CancelToken | None = None,
        deadline: Deadline | None = None,
    ) -> ToolReply:
        """Run one tool call to exactly one reply; never raises (except asyncio cancellation).

        Once the call is cancelled or past its deadline, that is the reply, whatever the
        tool produced meanwhile (upstream's timeout policy replaces the result likewise).
        """
        call_token = self._token(tool, timeout_ms, token, deadline)
        try:
            call_token.check()
            args = parse_arguments(tool, arguments)
            resolved = await resolve_caller(self.service, caller, call_token)
            text = await self._run(resolved, args, call_token)
            call_token.check()
            return ToolReply(output=text)
        except ToolAbortError as abort:
            return ToolReply(error=abort.failure(), cancel_reason=abort.reason)
        except HarnessError as error:
            return self._failed(call_token, error)
        except _PASSTHROUGH:
            raise
        except BaseException as error:  # a bug must still produce one safe reply
            return self._failed(call_token, boundary.sanitize("tool execution", error))

    @staticmethod
    def _failed(token: CancelToken, error: HarnessError) -> ToolReply:
        abort = token.failure
        if abort is not None:
            return ToolReply(error=abort, cancel_reason=token.reason)
        return ToolReply(error=error.failure())

    async def _run(self, caller: ResolvedCaller, args: ToolArgs, token: CancelToken) -> str:
        limit = self.config.max_search_results
        if isinstance(args, SessionSearchArgs):
            return await session_search.run(self.service, caller, args, token, max_results=limit)
        if isinstance(args, EventSearchArgs):
            return await event_search.run(self.service, caller, args, token, max_results=limit)
        if isinstance(args, SessionTraceArgs):
            return await session_trace.run(self.service, caller, args, token)
        if isinstance(args, EventTraceArgs):
            return await event_trace.run(self.service, caller, args, token)
        assert isinstance(args, EventReadArgs)
        return await event_read.run(self.service, caller, args, token)
