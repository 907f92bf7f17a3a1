"""Files that cannot be read are reported with file, line and reason, and the other
files go on: a torn last line, a line that is not a record, a record without a type,
a file without a session id (Claude Code; a file of resume summaries only says so) or
without a ``session_meta`` id (Codex)."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

from tests.fixtures.importers import (
    CLAUDE_MALFORMED,
    CLAUDE_PROJECTS,
    CODEX_MALFORMED,
    CODEX_SESSIONS,
    ingest,
)

BAD = CLAUDE_MALFORMED / "-home-dev-bad"
CX_BAD = CODEX_MALFORMED / "2025" / "10" / "04"


def cc(n: str, line: int, why: str) -> str:
    return f"{BAD / f'{n * 8}-{n * 4}-4{n * 3}-8{n * 3}-{n * 12}.jsonl'}:{line}: {why}"


def cx(time: str, n: int, line: int, why: str) -> str:
    name = f"rollout-2025-10-04T{time}-0199a000-0000-7000-8000-00000000000{n}.jsonl"
    return f"{CX_BAD / name}:{line}: {why}"


def test_each_broken_file_is_reported_and_the_others_are_ingested(tmp_path: Path) -> None:
    summary = ingest(
        tmp_path / "data", CLAUDE_PROJECTS, CLAUDE_MALFORMED, CODEX_SESSIONS, CODEX_MALFORMED
    )
    assert summary.sessions == 9  # every good file of both trees
    reasons = sorted(r.reason for r in summary.rejected)
    torn = "line is not valid JSON: unexpected end of data: line 1 column"
    assert reasons == sorted(
        [
            cc("5", 2, f"{torn} 157 (char 156)"),
            cc("6", 1, "no record carries a sessionId"),
            cc("7", 2, "record is not a JSON object"),
            cc("8", 1, "record has no type"),
            cc("9", 1, "no conversation: only summary records, none carries a sessionId"),
            cx("09-00-00", 4, 2, f"{torn} 102 (char 101)"),
            cx("09-10-00", 5, 1, "no session_meta line carries an id"),
            cx("09-20-00", 6, 2, "record has no type"),
        ]
    )
    skipped = [r.reason for r in summary.rejected if r.skipped]
    side = "no conversation: only summary records, none carries a sessionId"
    assert skipped == [cc("9", 1, side)]


def test_ingest_says_a_file_with_no_conversation_is_skipped_not_rejected(tmp_path: Path) -> None:
    from worker.cli.main import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        argv = ["ingest", str(CLAUDE_PROJECTS), str(CLAUDE_MALFORMED), "--data", str(tmp_path)]
        assert main(argv) == 0
    lines = out.getvalue().splitlines()
    side = cc("9", 1, "no conversation: only summary records, none carries a sessionId")
    assert lines[lines.index("skipped 1 files with no conversation:") + 1] == f"  {side}"
    rejected = lines[lines.index("rejected 4 files:") + 1 :]
    assert f"  {side}" not in rejected and len(rejected) == 4


def test_an_unreadable_file_is_reported_with_the_os_reason(tmp_path: Path) -> None:
    project = tmp_path / "projects" / "-home-dev-other"  # the good log's own project
    project.mkdir(parents=True)
    broken = project / "99999999-9999-4999-8999-999999999999.jsonl"
    broken.symlink_to(tmp_path / "gone.jsonl")  # listed by the directory, cannot be opened
    good = CLAUDE_PROJECTS / "-home-dev-other" / "44444444-4444-4444-8444-444444444444.jsonl"
    (project / good.name).write_bytes(good.read_bytes())
    summary = ingest(tmp_path / "data", tmp_path / "projects")
    assert summary.sessions == 1
    assert len(summary.rejected) == 1
    assert summary.rejected[0].reason.startswith(f"{broken}: cannot read: ")
    assert "No such file or directory" in summary.rejected[0].reason
