"""The manifest hosts load: the system-prompt section and the five tool definitions.

Names, descriptions and parameter schemas come from ``schemas.json`` (the conformance
file, byte for byte); execution mode and timeout from the tool registry and limits.
"""

from __future__ import annotations

from typing import Any, Final

from worker.calls.limits import ToolLimits
from worker.contract.arguments import PROMPT_TEXT, TOOL_DEFINITIONS
from worker.contract.jsjson import js_stringify
from worker.tools.registry import TOOLS

PROMPT_SECTION_NAME: Final = "tool:session-query"
PROMPT_SECTION_ORDER: Final = 113


def manifest(limits: ToolLimits | None = None) -> dict[str, Any]:
    """The prompt section and the five tool definitions, in registration order."""
    cfg = limits if limits is not None else ToolLimits()
    tools = []
    for definition in TOOL_DEFINITIONS:
        tool = TOOLS[definition["name"]]
        tools.append(
            {
                "name": definition["name"],
                "description": definition["description"],
                "parameters": definition["parameters"],
                "execution_mode": tool.mode,
                "timeout_ms": cfg.search_timeout_ms if tool.budget == "search" else None,
            }
        )
    return {
        "prompt_section": {
            "name": PROMPT_SECTION_NAME,
            "order": PROMPT_SECTION_ORDER,
            "text": PROMPT_TEXT,
        },
        "tools": tools,
    }


def manifest_json(limits: ToolLimits | None = None) -> str:
    """``manifest()`` as 2-space JSON, byte-stable for a given configuration (hosts cache
    the prompt prefix)."""
    return js_stringify(manifest(limits), 2)
