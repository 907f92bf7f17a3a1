"""A missing or invalid setting is one line naming how to give it: the command's flag
and its ``SESSIONQ_*`` variable (the variable alone for a setting with no flag), exit 2,
whatever model or validator rejected it. Real ``sessionq`` processes."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Final

import pytest

from tests.fixtures.processes import sessionq

REPO: Final = Path(__file__).resolve().parents[2]


def one_usage_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert done.stdout == ""
    assert "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


@pytest.mark.parametrize(
    "argv",
    [
        ["topics", "create"],
        ["indexer", "--data", "{tmp}/data"],
        ["worker", "--data", "{tmp}/data", "--insecure-unauthenticated-callers"],
        ["node", "--data", "{tmp}/data", "--insecure-unauthenticated-callers"],
        ["publish", "{tmp}"],
    ],
)
def test_a_missing_bootstrap_names_its_flag_and_variable(argv: list[str], tmp_path: Path) -> None:
    line = one_usage_line(sessionq(*(a.format(tmp=tmp_path) for a in argv)))
    assert line.endswith(": --bootstrap / SESSIONQ_BOOTSTRAP is required"), line
    assert "kafka" not in line.lower(), line
    assert not (tmp_path / "data").exists()


@pytest.mark.parametrize(
    ("variable", "value", "flag", "wording"),
    [
        (
            "SESSIONQ_MAX_SEARCH_RESULTS",
            "lots",
            "--max-search-results",
            "tool-session-query: maxSearchResults must be a positive safe integer",
        ),
        (
            "SESSIONQ_SEARCH_TIMEOUT_MS",
            "0",
            "--search-timeout-ms",
            "tool-session-query: searchTimeoutMs must be a positive integer no greater than",
        ),
        (
            "SESSIONQ_MAX_TIMEOUT_MS",
            "soon",
            "--max-timeout-ms",
            "sessionq: maxTimeoutMs must be a positive integer no greater than",
        ),
    ],
)
@pytest.mark.parametrize("command", ["worker", "call"])
def test_an_invalid_tool_limit_names_its_flag_and_variable_before_upstreams_words(
    variable: str, value: str, flag: str, wording: str, command: str, tmp_path: Path
) -> None:
    argv = {
        "worker": ["worker", "--data", str(tmp_path / "data"), "--bootstrap", "127.0.0.1:1",
                   "--insecure-unauthenticated-callers"],
        "call": ["call", "session_search", "{}", "--caller", "c", "--data", str(tmp_path)],
    }[command]  # fmt: skip
    line = one_usage_line(sessionq(*argv, env={variable: value}))
    assert line.startswith(f"sessionq {command}: {flag} / {variable}: {wording}"), line
    assert not (tmp_path / "data").exists()


def test_a_setting_without_a_flag_names_only_its_variable(tmp_path: Path) -> None:
    done = sessionq(
        "indexer", "--data", str(tmp_path / "data"), "--bootstrap", "127.0.0.1:1",
        env={"SESSIONQ_BATCH_MS": "0"},
    )  # fmt: skip
    line = one_usage_line(done)
    assert line.startswith("sessionq indexer: SESSIONQ_BATCH_MS: "), line
    assert "--batch-ms" not in line


def test_a_snapshot_flag_is_named_as_the_command_spells_it(tmp_path: Path) -> None:
    """``snapshot create`` takes ``--to`` (``--snapshot-to`` too): the shorter is named."""
    line = one_usage_line(sessionq("snapshot", "create", "--data", str(tmp_path)))
    assert line.endswith(": --to / SESSIONQ_SNAPSHOT_TO is required"), line
