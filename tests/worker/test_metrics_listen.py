"""A busy ``--metrics-listen`` port is met at the door by every long-running Kafka role
(``worker``, ``node``, ``indexer``) as ``serve`` meets a busy ``--listen``: one line
naming the address, the flag and its environment variable, exit 2, no traceback, and
before any connection to Kafka (the bootstrap address here answers nothing)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
UNREACHABLE = "127.0.0.1:1"
ROLES = {
    "worker": ["--insecure-unauthenticated-callers"],
    "node": ["--insecure-unauthenticated-callers"],
    "indexer": [],
}


def run_role(role: str, data: Path, *args: str, env: dict[str, str] | None = None) -> str:
    """The role's stderr; it must exit 2."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("SESSIONQ_")}
    done = subprocess.run(
        [sys.executable, "-m", "worker", role, "--data", str(data), "--bootstrap", UNREACHABLE,
         *ROLES[role], *args],
        cwd=REPO, env={**base, **(env or {})}, capture_output=True, text=True, timeout=120,
        check=False,
    )  # fmt: skip
    assert done.returncode == 2, (done.returncode, done.stderr)
    return done.stderr


@pytest.mark.parametrize("role", sorted(ROLES))
@pytest.mark.parametrize("given", ["flag", "env"])
def test_a_busy_metrics_port_is_one_line_and_exit_2(role: str, given: str, tmp_path: Path) -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        address = f"127.0.0.1:{held.getsockname()[1]}"
        if given == "flag":
            stderr = run_role(role, tmp_path / "data", "--metrics-listen", address)
        else:
            stderr = run_role(role, tmp_path / "data", env={"SESSIONQ_METRICS_LISTEN": address})
    assert "Traceback" not in stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith(
        f"sessionq {role}: --metrics-listen {address}: the address is already in use"
    ), lines[0]
    assert "SESSIONQ_METRICS_LISTEN" in lines[0]
