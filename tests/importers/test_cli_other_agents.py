"""``sessionq ingest`` on files no reader takes ("looks like …; not a supported session
log", one line each, exit 1 when nothing else was readable, 0 beside a good log), with
``--format gemini|opencode|copilot`` forced on a log of that agent (ingested) and on
another agent's log (one rejection line), and ``sessionq stats --json`` counting the
sessions of each of those agents."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import orjson
import pytest

from tests.data_paths import COPILOT_DIR, CORPUS_DIR, GEMINI_DIR, OPENCODE_DIR
from tests.fixtures.importers import CC_MAIN, CLAUDE_PROJECTS
from worker.cli.main import main

GEMINI_CHAT = next(GEMINI_DIR.glob("tmp/*/chats/session-2025-11-05T10-00-a1000001.json"))
OPENCODE_SESSION = next(OPENCODE_DIR.glob("storage/session/*/ses_6a1b00000001AbCdEfGhIjKl.json"))
COPILOT_EVENTS = (
    COPILOT_DIR / "session-state" / "c0000001-0000-4000-8000-000000000001" / "events.jsonl"
)
CLAUDE_LOG = CLAUDE_PROJECTS / "-home-dev-shop" / f"{CC_MAIN}.jsonl"
DSH_LOG = CORPUS_DIR / "examples__acp-agent__bash-tool-turn__session.jsonl"
SUFFIX = "; not a supported session log"


def _sqlite(path: Path) -> Path:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE session (id TEXT)")
    conn.commit()
    conn.close()
    return path


UNSUPPORTED = {
    "opencode.db": "an SQLite database (OpenCode 1.2 and later keep sessions in one)",
    "blob.jsonl": "a binary file",
    "history.json": "a Copilot CLI history-session-state file",
    "doc.json": "a JSON document",
    "notes.jsonl": "a text file that is not JSON lines",
}


def _write_unsupported(root: Path, name: str) -> Path:
    path = root / name
    if name == "opencode.db":
        return _sqlite(path)
    content = {
        "blob.jsonl": b"\x01\x00\x02 some bytes\n",
        "history.json": b'{"chatMessages": [], "timeline": []}\n',
        "doc.json": b'{\n  "name": "a config file"\n}\n',
        "notes.jsonl": b"hello world\nnot json either\n",
    }[name]
    path.write_bytes(content)
    return path


@pytest.mark.parametrize("name", sorted(UNSUPPORTED))
def test_a_file_no_reader_takes_is_named_for_what_it_looks_like(
    tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write_unsupported(tmp_path, name)
    assert main(["ingest", str(path), "--data", str(tmp_path / "data")]) == 1
    captured = capsys.readouterr()
    assert captured.out.splitlines() == [
        "ingested 0 sessions, 0 events, 0 documents from 1 files",
        "rejected 1 files:",
        f"  {path}:1: looks like {UNSUPPORTED[name]}{SUFFIX}",
    ]
    assert "Traceback" not in captured.err


def test_unsupported_files_beside_a_good_log_leave_it_ingested(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "good.jsonl").write_bytes(DSH_LOG.read_bytes())
    written = [_write_unsupported(logs, name) for name in sorted(UNSUPPORTED)]
    # A directory's logs are its *.jsonl files: the others are no candidates at all.
    bad = [p for p in written if p.suffix == ".jsonl"]
    assert main(["ingest", str(logs), "--data", str(tmp_path / "data")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("ingested 1 sessions, "), out
    assert f"from {1 + len(bad)} files" in out.splitlines()[0], out
    assert f"rejected {len(bad)} files:" in out
    for path in bad:
        lines = [line for line in out.splitlines() if str(path) in line]
        assert lines == [f"  {path}:1: looks like {UNSUPPORTED[path.name]}{SUFFIX}"], out


FORCED = [("gemini", GEMINI_CHAT), ("opencode", OPENCODE_SESSION), ("copilot", COPILOT_EVENTS)]


@pytest.mark.parametrize(("fmt", "log"), FORCED, ids=[f for f, _ in FORCED])
def test_a_forced_format_reads_its_agents_log_and_rejects_another(
    tmp_path: Path, fmt: str, log: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    assert main(["ingest", str(log), "--format", fmt, "--data", str(data)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("ingested 1 sessions, "), out
    assert "rejected" not in out
    assert main(["stats", "--data", str(data), "--json"]) == 0
    agents = orjson.loads(capsys.readouterr().out)["agents"]
    assert {a for a, c in agents.items() if c["sessions"]} == {_agent(fmt)}

    assert main(["ingest", str(CLAUDE_LOG), "--format", fmt, "--data", str(data)]) == 1
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert lines[:2] == [
        "ingested 0 sessions, 0 events, 0 documents from 1 files",
        "rejected 1 files:",
    ]
    assert len(lines) == 3 and lines[2].startswith(f"  {CLAUDE_LOG}:"), lines
    assert "Traceback" not in captured.err


def _agent(fmt: str) -> str:
    """The source agent a format's sessions are counted under in ``stats``."""
    return {"gemini": "gemini-cli", "opencode": "opencode", "copilot": "copilot-cli"}[fmt]


def test_stats_counts_the_sessions_of_each_other_agent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    assert (
        main(["ingest", str(GEMINI_DIR), str(OPENCODE_DIR), str(COPILOT_DIR), "--data", str(data)])
        == 0
    )
    out = capsys.readouterr().out
    assert out.startswith("ingested 8 sessions, "), out
    assert main(["stats", "--data", str(data), "--json"]) == 0
    stats = orjson.loads(capsys.readouterr().out)
    counted = {a: c["sessions"] for a, c in stats["agents"].items() if c["sessions"]}
    assert counted == {"gemini-cli": 4, "opencode": 2, "copilot-cli": 2}
    assert sum(a["events"] for a in stats["agents"].values()) == stats["events"]
    assert stats["sessions"] == 8
