"""The ``sessionq`` command line, run as a real subprocess (``python -m worker``).

Contract: ``ingest`` prints a summary and every rejected file with its reason (exit 0 when
anything was readable, non-zero when nothing was); ``call`` prints the tool's text (exit 0)
or ``CODE: message`` on stderr (exit 3), or with ``--json`` the reply envelope (exit 0 for
any tool outcome); bad usage exits 2; ``manifest`` is byte-stable and carries the upstream
tool schemas; ``stats`` describes the data directory.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Final

import pytest

from indexer.query.service import StoreQueryService
from tests.builders import assistant, header, plain, title, user
from tests.data_paths import UPSTREAM_TOOL_SCHEMAS
from tests.fixtures.processes import sessionq
from tests.tool_names import unknown_tool_message
from worker.calls.pipeline import Pipeline
from worker.tools.access import Caller

REPO: Final = Path(__file__).resolve().parents[2]
UNAUTHORIZED: Final = (
    "SESSION_QUERY_TOOL_UNAUTHORIZED: session target is outside the caller workspace\n"
)
CORPUS_REJECTS: Final = {
    # file name -> why it is invalid (SPEC §1.5: seqs must be contiguous from 0)
    "apps__web__cordis-tool-round__session.jsonl": ":8: session event seq 87 is not contiguous",
    "packages__test-support__acp-snapshot__fixtures__suite__authored-error__session.jsonl": (
        ":2: session event seq 1 is not contiguous"
    ),
    "packages__test-support__acp-snapshot__fixtures__suite__blocked-log__session.jsonl": (
        ":2: session event seq 1 is not contiguous"
    ),
}


def write_log(path: Path, head: dict[str, Any], events: Sequence[dict[str, Any]]) -> None:
    """A dsh JSONL session log: the header line, then one event per line."""
    lines = [json.dumps({"type": "session", **head}, ensure_ascii=False)]
    lines += [json.dumps(event, ensure_ascii=False) for event in events]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


STEP: Final = {"turn": 1, "step": 1}
SESSIONS: Final = {
    "cli-caller": (
        header("cli-caller", cwd="/w", created_at=1000),
        [
            plain(0, "turn/start", {"turn": 1}),
            user(1, "where did the cli needle go"),
            plain(2, "step/end", STEP),
            plain(3, "step/start", STEP),
        ],
    ),
    "cli-other": (
        header("cli-other", cwd="/w", created_at=2000, parent="cli-caller"),
        [
            plain(0, "turn/start", {"turn": 1}),
            user(1, "the cli needle is in the haystack — café"),
            title(2, "Haystack search"),
            plain(3, "step/start", STEP),
            assistant(4, "found the cli needle\nsecond line"),
            plain(5, "step/end", STEP),
        ],
    ),
    "cli-foreign": (
        header("cli-foreign", cwd="/elsewhere", created_at=3000),
        [user(0, "cli needle behind the wall")],
    ),
}
EVENT_COUNT: Final = sum(len(events) for _, events in SESSIONS.values())


@pytest.fixture(scope="module")
def logs_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("cli-logs")
    for sid, (head, events) in SESSIONS.items():
        write_log(root / f"{sid}.jsonl", head, events)
    return root


@pytest.fixture(scope="module")
def ingested(logs_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A data directory built by ``sessionq ingest`` (and what the command printed)."""
    data = tmp_path_factory.mktemp("cli-data") / "data"
    result = sessionq("ingest", str(logs_dir), "--data", str(data))
    assert result.returncode == 0, result.stderr
    return data, result.stdout


@pytest.fixture(scope="module")
def data_dir(ingested: tuple[Path, str]) -> Path:
    return ingested[0]


@pytest.fixture(scope="module")
def in_process(data_dir: Path) -> Iterator[Pipeline]:
    service = StoreQueryService(data_dir)
    try:
        yield Pipeline(service)
    finally:
        service.close()


def expected_text(tools: Pipeline, tool: str, arguments: dict[str, Any], caller: str) -> str:
    reply = asyncio.run(tools.call(tool, arguments, Caller(caller)))
    assert reply.ok, reply.text
    return reply.text


# ---- ingest ------------------------------------------------------------------------------------
def test_ingest_prints_a_summary_of_a_clean_store(ingested: tuple[Path, str]) -> None:
    _, stdout = ingested
    assert stdout.startswith(f"ingested 3 sessions, {EVENT_COUNT} events, ")
    assert stdout.rstrip("\n").endswith("documents from 3 files")
    assert "rejected" not in stdout


def test_ingest_of_the_real_corpus_reports_every_rejected_file_and_succeeds(
    corpus_dir: Path, tmp_path: Path
) -> None:
    result = sessionq("ingest", str(corpus_dir), "--data", str(tmp_path / "data"))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("ingested 156 sessions, ")
    assert lines[0].endswith(" from 159 files")
    assert lines[1] == "rejected 3 files:"
    rejected = lines[2:]
    assert len(rejected) == 3
    for name, reason in CORPUS_REJECTS.items():
        [line] = [line for line in rejected if f"/{name}:" in line]
        assert line.startswith(f"  {corpus_dir / name}{reason}; expected "), line
    # re-ingesting is a no-op that still names the invalid files
    again = sessionq("ingest", str(corpus_dir), "--data", str(tmp_path / "data"))
    assert again.returncode == 0
    assert again.stdout.splitlines()[0] == (
        "ingested 0 sessions, 0 events, 0 documents from 159 files (156 unchanged)"
    )
    assert again.stdout.splitlines()[1:] == lines[1:]


def test_ingest_of_only_invalid_files_fails_and_says_why(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    write_log(logs / "gap.jsonl", header("gap"), [plain(1, "turn/start", {"turn": 1})])
    (logs / "garbage.jsonl").write_text("this is not json\n", encoding="utf-8")
    result = sessionq("ingest", str(logs), "--data", str(tmp_path / "data"))
    assert result.returncode != 0
    assert result.stdout.splitlines()[0] == (
        "ingested 0 sessions, 0 events, 0 documents from 2 files"
    )
    assert f"  {logs / 'gap.jsonl'}:2: session event seq 1 is not contiguous; expected 0" in (
        result.stdout.splitlines()
    )
    assert any(
        line.startswith(f"  {logs / 'garbage.jsonl'}:1: ") for line in result.stdout.splitlines()
    )


def test_ingest_of_a_directory_without_logs_fails(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    result = sessionq("ingest", str(tmp_path / "empty"), "--data", str(tmp_path / "data"))
    assert result.returncode != 0
    assert "no session logs found" in result.stderr


def test_ingest_of_a_missing_path_fails_without_a_traceback(tmp_path: Path) -> None:
    result = sessionq("ingest", str(tmp_path / "nowhere"), "--data", str(tmp_path / "data"))
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    assert "nowhere" in result.stderr


# ---- call --------------------------------------------------------------------------------------
HAPPY_CALLS: Final = [
    ("session_search", {"query": "cli needle"}, "cli-caller"),
    ("session_event_search", {"session_id": "cli-other", "query": "needle"}, "cli-caller"),
    ("session_event_search", {"query": "cli needle"}, "cli-caller"),
    ("session_trace", {}, "cli-caller"),
    ("session_event_trace", {"session_id": "cli-other", "seq": 4}, "cli-caller"),
    ("session_event_read", {"session_id": "cli-other", "seq": 1, "after": 3}, "cli-caller"),
    ("session_trace", {}, "cli-foreign"),
]


@pytest.mark.parametrize(("tool", "arguments", "caller"), HAPPY_CALLS)
def test_call_prints_exactly_the_tool_text(
    data_dir: Path, in_process: Pipeline, tool: str, arguments: dict[str, Any], caller: str
) -> None:
    result = sessionq(
        "call", tool, json.dumps(arguments), "--data", str(data_dir), "--caller", caller
    )
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout == expected_text(in_process, tool, arguments, caller) + "\n"


def test_call_output_is_the_worked_trace_of_the_small_store(data_dir: Path) -> None:
    result = sessionq(
        "call", "session_trace", "{}", "--data", str(data_dir), "--caller", "cli-caller"
    )
    assert result.stdout == (
        "Session cli-caller — untitled\n"
        "Created: 1970-01-01T00:00:01.000Z\n"
        "Availability: persisted\n"
        "\n"
        "Ancestors (nearest first):\n"
        "- none (target is a root session)\n"
        "\n"
        "Descendants:\n"
        "- cli-other — Haystack search | 1970-01-01T00:00:02.000Z | persisted\n"
    )


def test_call_step_seq_moves_the_current_step_boundary(data_dir: Path) -> None:
    base = ["call", "session_event_search", '{"query": "cli needle"}', "--data", str(data_dir)]
    # the stored log's last step/start is seq 3, so seq 1 is a prior event ...
    found = sessionq(*base, "--caller", "cli-caller")
    assert "1. seq 1 | user/message | current |" in found.stdout
    # ... unless the host says the current step started at seq 1
    cut = sessionq(*base, "--caller", "cli-caller", "--step-seq", "1")
    assert cut.returncode == 0
    assert cut.stdout.endswith("No prior event matches found.\n")


def test_call_tool_error_prints_code_and_message_on_stderr(data_dir: Path) -> None:
    result = sessionq(
        "call",
        "session_trace",
        '{"session_id": "cli-foreign"}',
        "--data",
        str(data_dir),
        "--caller",
        "cli-caller",
    )
    assert (result.returncode, result.stdout, result.stderr) == (3, "", UNAUTHORIZED)


@pytest.mark.parametrize(
    ("arguments", "extra", "line"),
    [
        (
            '{"seq": -1}',
            [],
            "SESSION_QUERY_INVALID_FILTER: seq must be a non-negative safe integer",
        ),
        ('{"seq": "1"}', [], 'INVALID_ARGS: invalid arguments: "seq" must be an integer'),
        ('{"seq": 0}', ["--timeout-ms", "0"], "TOOL_TIMEOUT: tool call timed out after 0ms"),
    ],
)
def test_call_tool_owned_errors_exit_3(
    data_dir: Path, arguments: str, extra: list[str], line: str
) -> None:
    result = sessionq(
        "call",
        "session_event_read",
        arguments,
        "--data",
        str(data_dir),
        "--caller",
        "cli-caller",
        *extra,
    )
    assert (result.returncode, result.stdout, result.stderr) == (3, "", line + "\n")


def test_call_service_error_prints_only_code_and_message(data_dir: Path) -> None:
    result = sessionq(
        "call",
        "session_event_read",
        '{"seq": 99}',
        "--data",
        str(data_dir),
        "--caller",
        "cli-caller",
    )
    assert result.returncode == 3
    assert result.stderr == "SESSION_QUERY_EVENT_NOT_FOUND: session event was not found\n"


def test_call_unknown_caller_is_a_tool_error(data_dir: Path) -> None:
    result = sessionq("call", "session_trace", "{}", "--data", str(data_dir), "--caller", "ghost")
    assert result.returncode == 3
    assert (
        result.stderr.splitlines()[-1] == "SESSION_QUERY_SESSION_NOT_FOUND: session was not found"
    )


# ---- call --json -------------------------------------------------------------------------------
def json_call(data_dir: Path, tool: str, arguments: str, *extra: str) -> dict[str, Any]:
    result = sessionq(
        "call", tool, arguments, "--data", str(data_dir), "--caller", "cli-caller", "--json", *extra
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.endswith("}\n") and result.stdout.count("\n") == 1
    envelope: dict[str, Any] = json.loads(result.stdout)
    assert envelope["v"] == 1
    uuid.UUID(envelope["id"])
    return envelope


def test_json_envelope_of_a_success_carries_the_text(data_dir: Path, in_process: Pipeline) -> None:
    envelope = json_call(data_dir, "session_search", '{"query": "cli needle"}')
    expected = expected_text(in_process, "session_search", {"query": "cli needle"}, "cli-caller")
    assert envelope == {"v": 1, "id": envelope["id"], "ok": True, "text": expected}


@pytest.mark.parametrize(
    ("tool", "arguments", "error"),
    [
        (
            "session_trace",
            '{"session_id": "cli-foreign"}',
            {
                "code": "SESSION_QUERY_TOOL_UNAUTHORIZED",
                "message": "session target is outside the caller workspace",
            },
        ),
        (
            "session_delete",
            "{}",
            {"code": "INVALID_ARGS", "message": unknown_tool_message('"session_delete"')},
        ),
        (
            "session_search",
            '{"query": "   "}',
            {
                "code": "SESSION_QUERY_INVALID_QUERY",
                "message": "session-search query must contain non-whitespace text",
            },
        ),
    ],
)
def test_json_envelope_of_a_tool_error_still_exits_0(
    data_dir: Path, tool: str, arguments: str, error: dict[str, str]
) -> None:
    envelope = json_call(data_dir, tool, arguments)
    assert envelope == {"v": 1, "id": envelope["id"], "ok": False, "error": error}


def test_json_envelopes_have_fresh_request_ids(data_dir: Path) -> None:
    first = json_call(data_dir, "session_trace", "{}")
    second = json_call(data_dir, "session_trace", "{}")
    assert first["id"] != second["id"]
    assert {k: v for k, v in first.items() if k != "id"} == {
        k: v for k, v in second.items() if k != "id"
    }


# ---- usage errors ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("args", "complaint"),
    [
        (["call", "session_trace", "{}"], "--caller"),
        (["call", "session_trace", "{not json", "--caller", "cli-caller"], "ARGS is not JSON"),
        (["call", "session_trace", "", "--caller", "cli-caller"], "ARGS is not JSON"),
        (["call", "session_trace", "{}", "--caller", "c", "--step-seq", "-1"], "--step-seq"),
        (["call", "session_trace", "{}", "--caller", "c", "--timeout-ms", "soon"], "--timeout-ms"),
        (["call", "session_trace"], "arguments"),
        (["frobnicate"], "invalid choice"),
        ([], "required"),
    ],
)
def test_bad_usage_exits_2_without_output(data_dir: Path, args: list[str], complaint: str) -> None:
    if args and args[0] == "call":
        args = [*args, "--data", str(data_dir)]
    result = sessionq(*args)
    assert result.returncode == 2
    assert result.stdout == ""
    assert complaint in result.stderr


# ---- manifest and stats ------------------------------------------------------------------------
def test_manifest_is_byte_stable_and_carries_the_upstream_schemas() -> None:
    first, second = sessionq("manifest"), sessionq("manifest")
    assert first.returncode == second.returncode == 0
    assert first.stdout.encode() == second.stdout.encode()
    assert first.stdout.endswith("}\n") and not first.stdout.endswith("\n\n")
    manifest = json.loads(first.stdout)
    conformance = json.loads(UPSTREAM_TOOL_SCHEMAS.read_text(encoding="utf-8"))
    assert [
        {key: tool[key] for key in ("name", "description", "parameters")}
        for tool in manifest["tools"]
    ] == conformance["tools"]
    assert manifest["prompt_section"] == {
        "name": "tool:session-query",
        "order": 113,
        "text": conformance["prompt_section"],
    }
    # key order of the parameter schemas is part of the contract (SPEC §9.2)
    assert json.dumps(manifest["tools"][0]["parameters"]) == json.dumps(
        conformance["tools"][0]["parameters"]
    )


def test_console_script_is_the_same_program() -> None:
    script = Path(sys.executable).with_name("sessionq")
    if not script.exists():
        pytest.skip(f"no console script next to {sys.executable}")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SESSIONQ_")}
    result = subprocess.run(
        [str(script), "manifest"], capture_output=True, text=True, env=env, check=False, timeout=60
    )
    assert result.returncode == 0
    assert result.stdout == sessionq("manifest").stdout


def test_stats_describes_the_data_directory(data_dir: Path) -> None:
    text = sessionq("stats", "--data", str(data_dir))
    assert text.returncode == 0
    as_json = sessionq("stats", "--data", str(data_dir), "--json")
    assert as_json.returncode == 0
    stats = json.loads(as_json.stdout)
    assert stats["sessions"] == 3
    assert stats["events"] == EVENT_COUNT
    assert stats["workspaces"] == 2
    assert stats["live_sessions"] == 0
    # the text form is a table people read: labels in words, counts as numbers, no
    # Python reprs of the nested tables
    lines = text.stdout.splitlines()
    assert lines[0].split() == ["sessions", "3"]
    assert f"events         {EVENT_COUNT:,}" in lines
    assert "agents:" in lines and not any("{" in line or "'" in line for line in lines)


def test_stats_requires_a_data_directory() -> None:
    result = sessionq("stats")
    assert result.returncode == 2
    assert "--data" in result.stderr


@pytest.mark.parametrize(
    "argv",
    [
        ["call", "session_search", "{}", "--caller", "c"],
        ["delete", "s1", "--data", "/nonexistent"],
        ["indexer", "--data", "/nonexistent"],
        ["mcp"],
        ["publish", "/nonexistent"],
        ["topics", "create"],
        ["worker", "--data", "/nonexistent", "--insecure-unauthenticated-callers"],
    ],
)
@pytest.mark.parametrize("bootstrap", ["127.0.0.1:PORT", "localhost", ":9092", "h:1,h2"])
def test_a_bad_bootstrap_is_one_line_and_exit_2_for_every_command(
    argv: list[str],
    bootstrap: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The README placeholder pasted as written (``127.0.0.1:PORT``) is a usage error
    naming the setting, never a traceback, whether it comes as a flag or a variable."""
    from worker.cli.main import main

    for extra, env in ((["--bootstrap", bootstrap], None), ([], bootstrap)):
        if env is None:
            monkeypatch.delenv("SESSIONQ_BOOTSTRAP", raising=False)
        else:
            monkeypatch.setenv("SESSIONQ_BOOTSTRAP", env)
        with pytest.raises(SystemExit) as exited:
            main([*argv, *extra])
        assert exited.value.code == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1, err
        assert "--bootstrap / SESSIONQ_BOOTSTRAP" in err and "Traceback" not in err


def test_call_over_kafka_warns_of_a_caller_its_own_key_cannot_vouch_for(tmp_path: Path) -> None:
    """``keys generate`` leaves the key's entry beside it; ``call --bootstrap`` reads it
    and says, before sending, why the workers would refuse (the reply cannot say)."""
    keys = tmp_path / "keys"
    generated = sessionq(
        "keys", "generate", "--kid", "laptop", "--out", str(keys), "--workspace", "/home/dev"
    )
    assert generated.returncode == 0, generated.stderr
    assert json.loads((keys / "laptop.entry.json").read_text())["workspaces"] == ["/home/dev"]
    base = [
        "call",
        "session_search",
        '{"query": "x"}',
        "--caller",
        "c",
        "--bootstrap",
        "127.0.0.1:1",
        "--timeout-ms",
        "1000",
    ]
    signed = ["--signing-key", str(keys / "laptop.key"), "--key-id", "laptop"]
    cases = [
        ([*signed, "--workspace", "/home/other"], "covers /home/dev (its entry beside the key)"),
        ([*signed], "no --workspace (the caller's cwd) given"),
        ([*signed, "--workspace", "/home/dev/../x"], "not an absolute path without empty"),
    ]
    for extra, warning in cases:
        done = sessionq(*base, *extra)
        lines = done.stderr.splitlines()
        assert lines[0].startswith("sessionq call: warning: ") and warning in lines[0], lines
        assert "Traceback" not in done.stderr
    for extra in ([*signed, "--workspace", "/home/dev/app"], []):  # unsigned: no warning
        done = sessionq(*base, *extra)
        assert "warning" not in done.stderr, done.stderr
