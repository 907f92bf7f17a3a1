"""Files that must not stop an ingest: a FIFO named ``*.jsonl`` is skipped with one note
(never opened, so nothing hangs), a symlink loop in a Claude Code or Codex tree is
reported for its path and the tree's other files are ingested, and a line nested deeper
than the bound is one file's rejection with its path and line while a line at the bound
is ingested and readable."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from indexer.logs.importers import discover_report
from indexer.logs.reader import MAX_LOG_NESTING
from tests.fixtures.importers import CLAUDE_PROJECTS, CODEX_SESSIONS, Tools, ingest
from worker.cli.main import main


def _deep_dsh(path: Path, sid: str, levels: int) -> Path:
    """A dsh log whose event line nests ``levels`` levels (the line itself is one)."""
    value = "[" * (levels - 2) + "1" + "]" * (levels - 2)
    head = f'{{"type":"session","id":"{sid}","createdAt":1,"cwd":"/home/deep"}}'
    event = (
        '{"type":"user/message","seq":0,"time":1,"surfaceOp":"append","data":{"content":'
        '[{"type":"text","text":"deep hello"}],"role":"user","id":"u","source":{"kind":"user"},'
        f'"x":{value}}}}}'
    )
    path.write_text(head + "\n" + event + "\n")
    return path


def test_a_fifo_is_skipped_with_one_note_and_nothing_hangs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tree = tmp_path / "projects"
    shutil.copytree(CLAUDE_PROJECTS, tree)
    fifo = tree / "-home-dev-shop" / "99999999-9999-4999-8999-999999999999.jsonl"
    os.mkfifo(fifo)
    found = discover_report([tree])
    assert [str(s) for s in found.skipped] == [f"{fifo}: skipped: a FIFO"]
    assert fifo not in [s.path for s in found.sources]
    direct = discover_report([fifo])  # given by name: skipped too, never opened
    assert direct.sources == [] and len(direct.skipped) == 1
    assert main(["ingest", str(tree), str(fifo), "--data", str(tmp_path / "data")]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("ingested 6 sessions, ")
    assert captured.err.count(f"{fifo}: skipped: a FIFO") == 2


@pytest.mark.parametrize("tree", [CLAUDE_PROJECTS, CODEX_SESSIONS], ids=["claude", "codex"])
def test_a_symlink_loop_is_reported_and_the_other_files_ingested(
    tmp_path: Path, tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / tree.name
    shutil.copytree(tree, root)
    first = sorted(p for p in root.rglob("*.jsonl"))[0]
    loop = (
        first.parent / "rollout-loop.jsonl"
        if tree == CODEX_SESSIONS
        else first.parent / "loop.jsonl"
    )
    os.symlink(loop.name, loop)  # a link to itself
    (first.parent / "again").symlink_to(root)  # a directory loop
    found = discover_report([root])
    assert f"{loop}: skipped: a symlink loop" in [str(s) for s in found.skipped]
    assert main(["ingest", str(root), "--data", str(tmp_path / "data")]) == 0
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    sessions = 6 if tree == CLAUDE_PROJECTS else 3
    assert captured.out.startswith(f"ingested {sessions} sessions, "), captured.out
    assert f"{loop}: skipped: a symlink loop" in captured.err


def test_a_line_nested_deeper_than_the_bound_rejects_its_file_only(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    _deep_dsh(logs / "deep.jsonl", "deep", 1000)
    _deep_dsh(logs / "just.jsonl", "just", MAX_LOG_NESTING + 1)
    _deep_dsh(logs / "fits.jsonl", "fits", MAX_LOG_NESTING)
    summary = ingest(tmp_path / "data", logs)
    assert summary.sessions == 1
    assert sorted(r.reason for r in summary.rejected) == [
        f"{logs / 'deep.jsonl'}:2: line is nested deeper than {MAX_LOG_NESTING} levels",
        f"{logs / 'just.jsonl'}:2: line is nested deeper than {MAX_LOG_NESTING} levels",
    ]


async def test_a_line_at_the_bound_is_readable(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    _deep_dsh(logs / "fits.jsonl", "fits", MAX_LOG_NESTING)
    assert ingest(tmp_path / "data", logs).sessions == 1
    tools = Tools(tmp_path / "data")
    try:
        text = await tools.text("session_event_read", {"seq": 0}, "fits")
    finally:
        tools.close()
    assert "deep hello" in text
