"""Registration: definitions, prompt, execution modes, configuration (SPEC §9.1, §11, §12.1)."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from pydantic import ValidationError

from tests.data_paths import REPO_ROOT
from tests.data_paths import UPSTREAM_TOOL_SCHEMAS as CONFORMANCE
from worker.calls.limits import ToolLimits
from worker.manifest import manifest, manifest_json

SCHEMAS = REPO_ROOT / "worker" / "contract" / "schemas.json"


def test_packaged_definitions_are_the_conformance_file_byte_for_byte() -> None:
    assert SCHEMAS.read_bytes() == CONFORMANCE.read_bytes()


def test_manifest_carries_the_definitions_and_prompt_section() -> None:
    conformance = json.loads(CONFORMANCE.read_text(encoding="utf-8"))
    shown = manifest()
    assert shown["prompt_section"] == {
        "name": "tool:session-query", "order": 113, "text": conformance["prompt_section"]
    }
    assert "prior sessions" in shown["prompt_section"]["text"]
    assert [
        {k: t[k] for k in ("name", "description", "parameters")} for t in shown["tools"]
    ] == conformance["tools"]
    assert [t["name"] for t in shown["tools"]] == [
        "session_search", "session_event_search", "session_trace", "session_event_trace",
        "session_event_read",
    ]


def test_execution_modes_and_timeouts() -> None:
    shown = manifest(ToolLimits(maxSearchResults=7, searchTimeoutMs=1234))
    modes = {t["name"]: (t["execution_mode"], t["timeout_ms"]) for t in shown["tools"]}
    assert modes == {
        "session_search": ("exclusive", 1234),
        "session_event_search": ("exclusive", 1234),
        "session_trace": ("parallel", None),
        "session_event_trace": ("parallel", None),
        "session_event_read": ("parallel", None),
    }


def test_no_tool_exposes_paging_or_workspace_parameters() -> None:
    for tool in manifest()["tools"]:
        assert not {"cursor", "limit", "offset", "cwd"} & set(tool["parameters"]["properties"])


def test_manifest_json_is_byte_stable_json() -> None:
    text = manifest_json()
    assert text == manifest_json()
    assert json.loads(text) == manifest()
    assert '"timeout_ms": null' in text and "\n  " in text


def test_config_defaults_and_limits() -> None:
    assert ToolLimits() == ToolLimits(maxSearchResults=100, searchTimeoutMs=30000)
    config = ToolLimits.model_validate({"searchTimeoutMs": 2147483647})
    assert (config.max_search_results, config.search_timeout_ms) == (100, 2147483647)
    assert ToolLimits.model_validate({"max_search_results": 7.0}).max_search_results == 7


@pytest.mark.parametrize("value", [0, 1.5, math.nan, -1, True, "7", 2**53])
def test_invalid_max_search_results(value: Any) -> None:
    with pytest.raises(TypeError, match=r"^tool-session-query: maxSearchResults must be a "
                                        r"positive safe integer$"):
        ToolLimits(maxSearchResults=value)


@pytest.mark.parametrize("value", [0, 1.5, math.inf, 2147483648, None])
def test_invalid_search_timeout(value: Any) -> None:
    with pytest.raises(TypeError, match="no greater than 2147483647"):
        ToolLimits(searchTimeoutMs=value)


def test_config_is_frozen_and_closed() -> None:
    config = ToolLimits()
    with pytest.raises(ValidationError):
        config.max_search_results = 5
    with pytest.raises(ValidationError):
        ToolLimits.model_validate({"maxResults": 5})
