"""The README's Kafka quickstart and its partitioned-nodes block, run exactly as written
(each block as one ``bash`` script) in a clean copy of the repository: each answers its
call, and each stops everything it started (no process of it left, no traceback).
Real processes, a real broker of their own (the blocks start and stop it)."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Final

import pytest

from tests.fixtures.processes import clean_copy

pytestmark = [pytest.mark.kafka, pytest.mark.slow]
REPO: Final = Path(__file__).resolve().parents[2]
VENV: Final = Path(sys.executable).parent.parent  # the venv running the tests
BLOCK_S: Final = 600.0  # a whole block: two brokers starts at most, calls within 60 s


def block_after(heading: str) -> str:
    """The first ```sh block of the README section ``heading``."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text[text.index(f"\n## {heading}\n") :]
    found = re.search(r"```sh\n(.*?)```", section, re.DOTALL)
    assert found is not None, heading
    return found.group(1)


def run_block(clone: Path, script: str, log: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SESSIONQ_")}
    env["PYTHONUNBUFFERED"] = "1"
    with log.open("w") as err:
        proc = subprocess.Popen(
            ["bash", "-c", script], cwd=clone, env=env, stdout=subprocess.PIPE,
            stderr=err, text=True, start_new_session=True,
        )  # fmt: skip
        try:
            out, _ = proc.communicate(timeout=BLOCK_S)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)  # a block that did not end itself
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, log.read_text())


def left_over(clone: Path) -> list[str]:
    """Processes still running from the clone (its roles or its broker)."""
    ps = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True, check=True)
    return [line for line in ps.stdout.splitlines() if str(clone) in line]


def test_the_quickstart_and_the_nodes_block_run_and_stop_as_written(tmp_path: Path) -> None:
    if shutil.which("java") is None:
        pytest.skip("no Java for the local broker")
    clone = clean_copy(tmp_path / "clone", venv=VENV)
    caller = "3eb62c1c-5ba4-4881-87fd-7d46cc858ee3"  # a demo session (sessionq demo-corpus)
    try:
        quick = run_block(clone, block_after("Kafka quickstart (local Apache Kafka, no Docker)"),
                          tmp_path / "quickstart.log")  # fmt: skip
        assert quick.returncode == 0, quick.stderr[-4000:]
        assert "Session search results" in quick.stdout, (quick.stdout, quick.stderr[-4000:])
        assert caller not in quick.stdout.split("results", 1)[1]  # the caller is not its own hit
        assert "Traceback" not in quick.stderr, quick.stderr[-4000:]
        assert not left_over(clone), left_over(clone)

        nodes = run_block(clone, block_after("Partitioned nodes"), tmp_path / "nodes.log")
        assert nodes.returncode == 0, nodes.stderr[-4000:]
        assert "Session search results" in nodes.stdout, (nodes.stdout, nodes.stderr[-4000:])
        assert "Traceback" not in nodes.stderr, nodes.stderr[-4000:]
        assert re.search(r"^sessions\s+[1-9]", nodes.stdout, re.MULTILINE) or re.search(
            r"^owned\s+", nodes.stdout, re.MULTILINE
        ), nodes.stdout
        assert not left_over(clone), left_over(clone)
    finally:
        subprocess.run(
            ["bash", str(clone / "deploy/kafka/stop.sh"), "--data", str(clone / ".sessionq/kafka")],
            capture_output=True, check=False, timeout=120,
        )  # fmt: skip
