"""Issue 10 item 9: ``sessionq call`` edges end in one line on stderr and the right exit
status: an unreachable broker (no traceback, no "Unclosed" client warning) and a
``--caller`` that is not UTF-8 (bad usage, exit 2, naming the flag)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.builders import header, user
from tests.worker.test_cli import write_log

REPO = Path(__file__).resolve().parents[2]


def _run(*args: bytes | str) -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SESSIONQ_")}
    env["PYTHONWARNINGS"] = "always"  # surface ResourceWarning / "Unclosed" warnings
    argv = [os.fsencode(a) if isinstance(a, str) else a for a in args]
    return subprocess.run(
        [os.fsencode(sys.executable), b"-m", b"worker", *argv],
        cwd=REPO,
        env=env,
        capture_output=True,
        timeout=120,
        check=False,
    )


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("abuse-cli")
    (root / "logs").mkdir()
    write_log(root / "logs" / "s1.jsonl", header("s1", cwd="/abuse/cli"), [user(0, "hi")])
    data = root / "data"
    done = _run("ingest", str(root / "logs"), "--data", str(data))
    assert done.returncode == 0, done.stderr
    return data


def test_unreachable_broker_is_one_line_without_traceback_or_unclosed_warning() -> None:
    result = _run("call", "session_trace", "{}", "--bootstrap", "127.0.0.1:1", "--caller", "s1")
    err = result.stderr.decode()
    assert result.returncode not in (0, 2), err  # a failure, not bad usage
    assert result.stdout == b""
    assert len(err.strip().splitlines()) == 1, err
    assert err.startswith("sessionq call: "), err
    assert "Traceback" not in err and "Unclosed" not in err, err


@pytest.mark.parametrize("flag", ["--caller", "--workspace"])
def test_caller_that_is_not_utf8_is_bad_usage(data_dir: Path, flag: str) -> None:
    extra: list[bytes | str] = ["--caller", "s1"] if flag != "--caller" else []
    result = _run("call", "session_trace", "{}", "--data", str(data_dir), *extra, flag, b"\xff")
    err = result.stderr.decode()
    assert result.returncode == 2, err
    assert result.stdout == b""
    assert err == f"sessionq call: {flag} is not valid UTF-8\n"
