"""An ``indexer`` that cannot start creates nothing: with the broker unreachable, or the
events topic missing, it fails in one line (no traceback) and its ``--data`` directory
does not exist afterwards. Real ``sessionq indexer`` processes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixtures.kafka import UniqueName
from tests.kafka.processes import REPO_ROOT


def run_indexer(data: Path, bootstrap: str, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("SESSIONQ_")}
    return subprocess.run(
        [sys.executable, "-m", "worker", "indexer", "--data", str(data),
         "--bootstrap", bootstrap, "--metrics-listen", ""],
        cwd=REPO_ROOT, env={**base, **env}, capture_output=True, text=True, timeout=120,
        check=False,
    )  # fmt: skip


def assert_one_line_failure(done: subprocess.CompletedProcess[str], *words: str) -> None:
    assert done.returncode == 1, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr, done.stderr
    said = [line for line in done.stderr.splitlines() if line.startswith("sessionq indexer: ")]
    assert len(said) == 1, done.stderr
    for word in words:
        assert word in said[0], said[0]


def test_an_unreachable_broker_leaves_no_data_dir(tmp_path: Path) -> None:
    data = tmp_path / "new" / "data"
    done = run_indexer(data, "127.0.0.1:1")
    assert_one_line_failure(done, "Kafka at 127.0.0.1:1", "connection refused")
    assert not (tmp_path / "new").exists()


@pytest.mark.kafka
def test_a_missing_events_topic_is_one_line_and_leaves_no_data_dir(
    kafka_bootstrap: str, unique_name: UniqueName, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    missing = unique_name("missing-events")
    done = run_indexer(data, kafka_bootstrap, SESSIONQ_EVENTS_TOPIC=missing)
    assert_one_line_failure(done, f"{missing!r} does not exist", "sessionq topics create")
    assert not data.exists()
