"""Which log a session belongs to, whatever order the logs are read in.

Two cases an attacker's pass found: a dsh log and a Claude Code log claiming the same
session id were resolved by processing order (``ingest`` kept the dsh one, ``serve`` the
Claude Code one); and a Claude Code log placed in project A's directory but claiming
project B's cwd became a session — a subagent's too — in workspace B.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any, Final

import pytest

from indexer.logs.watch import WatchRoot
from indexer.sources.local.applier import Applier, ApplyStatus
from indexer.sources.loop import RecordLoop
from indexer.store.records.store import Store
from tests.data_dirs import stored_headers
from worker.cli.main import main

SID: Final = "0e0e0000-0000-4000-8000-000000000001"


def _run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = main(list(argv))
    return code, out.getvalue()


def _dsh(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    head = {"type": "session", "version": 0, "id": SID, "createdAt": 1, "cwd": "/home/dev/a"}
    message = {
        "content": [{"type": "text", "text": "the dsh prompt"}],
        "role": "user",
        "id": "u0",
        "source": {"kind": "user"},
    }
    event = {"type": "user/message", "seq": 0, "time": 2, "data": message, "surfaceOp": "append"}
    path = root / "dsh.jsonl"
    path.write_text(json.dumps(head) + "\n" + json.dumps(event) + "\n")
    return path


def _claude(project: Path, cwd: str, name: str = SID, **extra: Any) -> Path:
    project.mkdir(parents=True, exist_ok=True)
    record = {
        "type": "user",
        "sessionId": SID,
        "cwd": cwd,
        "uuid": "c0",
        "timestamp": "2025-11-10T10:00:00.000Z",
        "message": {"role": "user", "content": "the claude prompt"},
        **extra,
    }
    path = project / f"{name}.jsonl"
    path.write_text(json.dumps(record) + "\n")
    return path


@pytest.mark.parametrize("dsh_first", [True, False], ids=["dsh-first", "claude-first"])
def test_a_dsh_log_owns_its_id_whichever_log_is_ingested_first(
    tmp_path: Path, dsh_first: bool
) -> None:
    dsh = _dsh(tmp_path / "dsh")
    claude = _claude(tmp_path / "projects" / "-home-dev-a", "/home/dev/a")
    data = tmp_path / "data"
    for path in (dsh, claude) if dsh_first else (claude, dsh):
        code, out = _run("ingest", str(path), "--data", str(data))
        assert code in (0, 1), out
    header = stored_headers(data)[SID]
    assert "sourceAgent" not in header, header  # the dsh log's
    code, text = _run(
        "call", "session_event_read", json.dumps({"seq": 0}), "--data", str(data),
        "--caller", SID,
    )  # fmt: skip
    assert code == 0 and "the dsh prompt" in text and "the claude prompt" not in text


def test_the_local_source_gives_the_id_to_a_dsh_log_that_comes_after(tmp_path: Path) -> None:
    """``serve``'s writer: the Claude Code log is applied first, the dsh log of the same
    id appears later (the order that kept the Claude Code session before)."""
    root = tmp_path / "logs"
    _claude(root / "projects" / "-home-dev-a", "/home/dev/a")
    (root / "dsh").mkdir()
    data = tmp_path / "data"
    store = Store(data)
    try:
        roots = [WatchRoot(root / "projects"), WatchRoot(root / "dsh")]  # as serve --sessions
        applier = Applier(store, RecordLoop(store), roots, ApplyStatus(), lambda: False)
        applier.first_pass()
        assert stored_headers(data)[SID]["sourceAgent"] == "claude-code"
        _dsh(root / "dsh")
        applier.rescan()
    finally:
        store.close()
    assert "sourceAgent" not in stored_headers(data)[SID]


def test_a_claude_log_claiming_another_projects_cwd_is_rejected(tmp_path: Path) -> None:
    projects = tmp_path / "projects"
    outsider = _claude(projects / "-home-dev-a", "/home/dev/b")
    sibling = _claude(projects / "-home-dev-a", "/home/dev/a-other", name="sibling")
    inside = _claude(
        projects / "-home-dev-a", "/home/dev/a/src", name="inside",
        sessionId="0e0e0000-0000-4000-8000-000000000002",
    )  # fmt: skip
    child = projects / "-home-dev-a" / SID / "subagents"
    subagent = _claude(child, "/home/dev/b", name="agent-x1", isSidechain=True, agentId="x1")
    data = tmp_path / "data"
    code, out = _run("ingest", str(projects), "--data", str(data))
    assert code == 0, out
    for path, cwd in (
        (outsider, "/home/dev/b"),
        (sibling, "/home/dev/a-other"),
        (subagent, "/home/dev/b"),
    ):
        assert (
            f"{path}:1: cwd {cwd} is not under the project directory the log lies in (-home-dev-a)"
            in out
        ), out
    headers = stored_headers(data)
    assert set(headers) == {"0e0e0000-0000-4000-8000-000000000002"}
    assert headers["0e0e0000-0000-4000-8000-000000000002"]["cwd"] == "/home/dev/a/src"
    del inside
