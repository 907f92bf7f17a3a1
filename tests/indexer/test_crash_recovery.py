"""A store killed at any point of an ingest reopens with nothing half-applied, and
re-ingesting converges to exactly the store of a clean ingest.

Kills land either at a random moment (SIGKILL) or deterministically between the Tantivy
commit and the SQLite commit (the ``after-index-commit`` failpoint of the checkpoint).
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from indexer.logs.roots import discover
from indexer.sources.files import ingest_files
from indexer.store.records.store import Store
from tests.snapshots import snapshot

REPO = Path(__file__).resolve().parents[2]
FAILPOINT_ENV = "SESSIONQ_FAILPOINT"  # the explicit test setting (indexer.failpoints)
COMMIT_EVERY = 97


def _ingest_cmd(corpus: Path, data: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "worker",
        "ingest",
        str(corpus),
        "--data",
        str(data),
        "--commit-every",
        str(COMMIT_EVERY),
    ]


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory, corpus_dir: Path) -> dict[str, object]:
    data = tmp_path_factory.mktemp("clean")
    store = Store(data)
    ingest_files(store, discover([corpus_dir]), commit_every_events=COMMIT_EVERY)
    store.close()
    return snapshot(data)


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != FAILPOINT_ENV}
    env["PYTHONPATH"] = str(REPO)
    env.update(extra)
    return env


def _assert_whole_sessions(data: Path, clean: dict[str, object]) -> None:
    if not (data / "store.sqlite3").exists():
        return
    conn = sqlite3.connect(data / "store.sqlite3")
    try:
        created = conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'sessions'").fetchone()
    finally:
        conn.close()
    if created is None:  # killed before the schema's one transaction committed
        return
    full = {row[0]: row[6] for row in clean["sessions"]}  # type: ignore[attr-defined]
    partial = snapshot(data)
    for row in partial["sessions"]:
        assert row[6] == full[row[0]], f"session {row[0]} is half-applied"
    stored_events = {(r[0], r[1]) for r in partial["events"]}
    assert len(stored_events) == sum(row[6] for row in partial["sessions"])


def _finish_and_compare(data: Path, corpus: Path, clean: dict[str, object]) -> None:
    done = subprocess.run(_ingest_cmd(corpus, data), env=_env(), capture_output=True)
    assert done.returncode == 0, done.stderr.decode()
    assert snapshot(data) == clean


@pytest.mark.slow
@pytest.mark.parametrize("commit_number", [1, 4, 9])
def test_crash_between_index_and_table_commit_converges(
    tmp_path: Path, corpus_dir: Path, clean: dict[str, object], commit_number: int
) -> None:
    data = tmp_path / "crashed"
    run = subprocess.run(
        _ingest_cmd(corpus_dir, data),
        env=_env(**{FAILPOINT_ENV: f"after-index-commit:{commit_number}"}),
        capture_output=True,
    )
    assert run.returncode == 137, "the failpoint did not fire"
    _assert_whole_sessions(data, clean)
    _finish_and_compare(data, corpus_dir, clean)


@pytest.mark.slow
@pytest.mark.parametrize("kill_after_s", [0.3, 0.45, 0.6])
def test_sigkill_at_a_random_moment_converges(
    tmp_path: Path, corpus_dir: Path, clean: dict[str, object], kill_after_s: float
) -> None:
    data = tmp_path / "crashed"
    proc = subprocess.Popen(
        _ingest_cmd(corpus_dir, data),
        env=_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    time.sleep(kill_after_s)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    _assert_whole_sessions(data, clean)
    _finish_and_compare(data, corpus_dir, clean)
