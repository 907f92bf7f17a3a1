"""``sessionq snapshot create`` / ``restore`` as real subprocesses: what they print and
how they exit (0 done or nothing to do, 1 failed, 2 bad usage), one line per error."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Final

from tests.fixtures.processes import clean_env, run
from tests.fixtures.snapshot import S3Server, corrupt
from tests.snapshot.helpers import build, view

NOT_INHERITED = ("SESSIONQ_", "AWS_")

REPO: Final = Path(__file__).resolve().parents[2]


def sessionq(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """No ``AWS_*`` variable of the developer's either: the snapshot store is the test's."""
    return run([sys.executable, "-m", "worker", *args], env=clean_env(env, drop=NOT_INHERITED))


def one_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    return lines[0]


def test_create_then_restore_through_the_cli(tmp_path: Path) -> None:
    data, snaps, restored = tmp_path / "data", tmp_path / "snaps", tmp_path / "restored"
    build(data, 3)
    made = sessionq("snapshot", "create", "--data", str(data), "--to", str(snaps))
    assert made.returncode == 0, made.stderr
    assert made.stdout.startswith(f"snapshot {snaps}/") and "sessionq.events[0]@3" in made.stdout

    got = sessionq("snapshot", "restore", "--from", str(snaps), "--data", str(restored))
    assert got.returncode == 0, got.stderr
    assert "the indexer resumes from sessionq.events[0]@3" in got.stdout
    assert view(restored).sessions == view(data).sessions

    again = sessionq("snapshot", "restore", "--from", str(snaps), "--data", str(restored))
    assert again.returncode == 1
    assert one_line(again.stderr).startswith("sessionq snapshot restore: ")
    assert "--force" in again.stderr
    noop = sessionq(
        "snapshot", "restore", "--from", str(snaps), "--data", str(restored), "--if-empty"
    )
    assert noop.returncode == 0 and "already holds data" in one_line(noop.stderr)


def test_settings_come_from_the_environment_too(tmp_path: Path) -> None:
    data, snaps, restored = tmp_path / "data", tmp_path / "snaps", tmp_path / "restored"
    build(data, 2)
    env = {"SESSIONQ_DATA": str(data), "SESSIONQ_SNAPSHOT_TO": str(snaps)}
    assert sessionq("snapshot", "create", env=env).returncode == 0
    env = {"SESSIONQ_DATA": str(restored), "SESSIONQ_SNAPSHOT_FROM": str(snaps)}
    assert sessionq("snapshot", "restore", "--if-empty", env=env).returncode == 0
    assert len(view(restored).sessions) == 2


def test_errors_are_one_line_with_exit_codes(tmp_path: Path, s3_server: S3Server) -> None:
    data, snaps = tmp_path / "data", tmp_path / "snaps"
    missing = sessionq("snapshot", "create", "--data", str(data), "--to", str(snaps))
    assert missing.returncode == 1
    assert "no sessionq data directory" in one_line(missing.stderr)

    usage = sessionq("snapshot", "create", "--data", str(data), "--to", "gs://bucket/x")
    assert usage.returncode == 2 and "unsupported snapshot location" in one_line(usage.stderr)
    no_to = sessionq("snapshot", "create", "--data", str(data))
    assert no_to.returncode == 2 and "SESSIONQ_SNAPSHOT_TO" in one_line(no_to.stderr)

    build(data, 2)
    assert sessionq("snapshot", "create", "--data", str(data), "--to", str(snaps)).returncode == 0
    [name] = os.listdir(snaps)
    corrupt(snaps / name / "store.sqlite3")
    bad = sessionq("snapshot", "restore", "--from", str(snaps), "--data", str(tmp_path / "r"))
    assert bad.returncode == 1
    assert "store.sqlite3 fails its checksum" in one_line(bad.stderr)
    assert not (tmp_path / "r").exists()

    # an S3 bucket that does not exist: one line naming the location, no secret in it
    nowhere = sessionq(
        "snapshot",
        "restore",
        "--from",
        "s3://no-such-bucket/replicas",
        "--data",
        str(tmp_path / "r"),
        env=s3_server.env(),
    )
    assert nowhere.returncode == 1, nowhere.stderr
    line = one_line(nowhere.stderr)
    assert "s3://no-such-bucket/replicas" in line and "sessionq-test-secret" not in line
