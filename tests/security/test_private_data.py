"""Another local user reads nothing of sessionq's (docs/security.md, "another local
user"): a data dir, its snapshots and a restore are owner-only whatever the umask, built
by the real CLI in subprocesses.

Every directory sessionq makes is 0700 and every file it writes itself is 0600. Tantivy
writes its own segment files with the umask's bits: they are reached only through the
data dir and its ``tantivy/``, both 0700. The SQLite WAL and its index exist while any
process has the database open; a reader's connection (as ``serve`` holds) opens them
here, and SQLite gives them the database file's bits.
"""

from __future__ import annotations

import os
import pwd
import shutil
import sqlite3
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import pytest

from indexer.store.layout import INDEX_DIR_NAME, sqlite_path
from indexer.store.tables.connection import connect
from tests.data_paths import CLAUDE_CODE_DIR
from tests.fixtures.processes import clean_env, run

LOGS: Final = CLAUDE_CODE_DIR / "projects"
OTHER_UID: Final = 65534  # nobody


def sessionq(*args: Path | str, umask: int = 0o022) -> None:
    """``python -m worker ARGS`` with the given umask; it must succeed."""
    env = clean_env(drop=("SESSIONQ_", "AWS_"))
    done = run([sys.executable, "-m", "worker", *args], env=env, umask=umask)
    assert done.returncode == 0, done.stderr


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def entries(root: Path) -> Iterator[Path]:
    """``root`` and everything below it."""
    yield root
    for parent, dirs, files in os.walk(root):
        for name in [*dirs, *files]:
            yield Path(parent) / name


def open_reader(data: Path) -> sqlite3.Connection:
    """A reader's connection, open while the test looks: the WAL and its index exist."""
    conn = connect(sqlite_path(data), readonly=True)
    conn.execute("SELECT count(*) FROM sessions").fetchone()
    assert (data / "store.sqlite3-wal").exists() and (data / "store.sqlite3-shm").exists()
    return conn


@pytest.mark.parametrize("umask", [0o000, 0o022], ids=["umask-000", "umask-022"])
def test_a_data_dir_its_snapshot_and_a_restore_are_owner_only_whatever_the_umask(
    tmp_path: Path, umask: int
) -> None:
    home = tmp_path / "home"  # the user's own directory: sessionq does not own it
    home.mkdir()
    home.chmod(0o755)
    data, snaps, restored = home / "sq" / "data", home / "snaps", home / "again" / "data"
    sessionq("ingest", LOGS, "--data", data, umask=umask)
    sessionq("snapshot", "create", "--data", data, "--to", snaps, umask=umask)
    sessionq("snapshot", "restore", "--from", snaps, "--data", restored, umask=umask)

    reader = open_reader(data)
    try:
        assert mode(home) == 0o755, "a directory sessionq did not make is left as it is"
        index = data / INDEX_DIR_NAME
        looked = 0
        for root in (home / "sq", snaps, home / "again"):
            for path in entries(root):
                looked += 1
                if path.is_dir():
                    assert mode(path) == 0o700, path
                elif path.parent != index:  # Tantivy's own files: below two 0700 dirs
                    assert mode(path) == 0o600, path
        assert looked > 30
        assert mode(data) == mode(index) == 0o700
        assert mode(data / "store.sqlite3-wal") == mode(data / "store.sqlite3-shm") == 0o600
    finally:
        reader.close()


def test_the_writer_tightens_a_data_dir_an_older_release_left_open(tmp_path: Path) -> None:
    data = tmp_path / "data"
    sessionq("ingest", LOGS, "--data", data)
    data.chmod(0o755)
    sessionq("ingest", LOGS, "--data", data)
    assert mode(data) == 0o700


def as_another_user() -> list[str]:
    """The command prefix that runs a program as uid 65534 with no groups; skips when
    this process cannot switch users (CI runs the tests as root, so it runs there)."""
    if os.geteuid() != 0:
        pytest.skip("acting as another user needs root (the tests run as root in CI)")
    setpriv = shutil.which("setpriv")
    if setpriv is not None:
        return [setpriv, f"--reuid={OTHER_UID}", f"--regid={OTHER_UID}", "--clear-groups", "--"]
    runuser = shutil.which("runuser")
    try:
        name = pwd.getpwuid(OTHER_UID).pw_name
    except KeyError:
        name = None
    if runuser is not None and name is not None:
        return [runuser, "-u", name, "--"]
    pytest.skip("neither setpriv nor runuser (with a user of uid 65534) to act as another user")


@pytest.fixture
def shared_home() -> Iterator[Path]:
    """A directory other users may enter, like a home directory (``tmp_path`` lies below
    pytest's own 0700 directory, which would bar them by itself)."""
    home = Path(tempfile.mkdtemp(prefix="sessionq-home-"))
    try:
        home.chmod(0o755)
        yield home
    finally:
        shutil.rmtree(home, ignore_errors=True)


def test_another_user_can_neither_list_the_data_dir_nor_read_the_database_or_its_wal(
    shared_home: Path,
) -> None:
    other = as_another_user()
    data, snaps = shared_home / "data", shared_home / "snaps"
    sessionq("ingest", LOGS, "--data", data)
    sessionq("snapshot", "create", "--data", data, "--to", snaps)
    (snapshot,) = snaps.iterdir()

    def run(*argv: Path | str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*other, *map(str, argv)], capture_output=True, text=True, timeout=30, check=False
        )

    listed = run("ls", shared_home)
    assert listed.returncode == 0, f"the other user must reach the home dir: {listed.stderr}"
    assert {"data", "snaps"} <= set(listed.stdout.split())
    reader = open_reader(data)
    try:
        for argv in (
            ("ls", data),
            ("cat", sqlite_path(data)),
            ("cat", data / "store.sqlite3-wal"),
            ("cat", data / "store.sqlite3-shm"),
            ("ls", data / INDEX_DIR_NAME),
            ("ls", snapshot),
            ("cat", snapshot / "store.sqlite3"),
        ):
            refused = run(*argv)
            assert refused.returncode != 0, f"{argv} as uid {OTHER_UID}: {refused.stdout[:200]}"
            assert "Permission denied" in refused.stderr, refused.stderr
    finally:
        reader.close()
