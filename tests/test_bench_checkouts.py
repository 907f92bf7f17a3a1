"""The benchmarks that run another checkout's code beside this tree's refuse a path that
is no checkout: its code runs with that path first on ``sys.path``, so a missing one
would run this tree on both sides and report no difference."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    ("script", "flag"),
    [
        ("compare_outputs.py", "--against"),
        ("bench_cpu.py", "--baseline-src"),
        ("bench_capacity.py", "--baseline-src"),
        ("bench_memory.py", "--baseline-src"),
        ("bench_memory_formats.py", "--baseline-src"),
        ("bench_redaction.py", "--baseline-src"),
        ("bench_startup.py", "--baseline-src"),
        ("bench_watcher.py", "--baseline-src"),
    ],
)
def test_a_missing_checkout_is_a_usage_error(tmp_path: Path, script: str, flag: str) -> None:
    gone = tmp_path / "no-such-checkout"
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / script), flag, str(gone)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert f"{gone} is no sessionq checkout (no indexer/)" in done.stderr
    assert "Traceback" not in done.stderr
