"""``indexer.store.private``: what sessionq makes is 0700 (directories) and 0600 (files)
whatever the umask, even one that takes the owner's own bits; what it did not make is
left as it is."""

from __future__ import annotations

import contextlib
import logging
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from indexer.store.private import (
    copy_file,
    create_file,
    make_dir,
    make_dirs,
    open_file,
    own_dir,
    write_file,
)
from indexer.store.tables.connection import connect


def mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@contextlib.contextmanager
def umask(value: int) -> Iterator[None]:
    """This process's umask for the block."""
    old = os.umask(value)
    try:
        yield
    finally:
        os.umask(old)


# 0o277 takes the owner's own write and search bits: nested dirs are made all the same.
@pytest.mark.parametrize("mask", [0o000, 0o022, 0o277])
def test_every_directory_made_is_0700_and_an_existing_parent_is_left(
    tmp_path: Path, mask: int
) -> None:
    tmp_path.chmod(0o755)
    deep = tmp_path / "a" / "b" / "c"
    with umask(mask):
        make_dirs(deep)
        make_dirs(deep)  # exists: nothing to do
        make_dir(deep / "fresh")
    assert [mode(p) for p in (tmp_path / "a", tmp_path / "a" / "b", deep)] == [0o700] * 3
    assert mode(tmp_path) == 0o755
    assert mode(deep / "fresh") == 0o700
    with pytest.raises(FileExistsError):
        make_dir(deep / "fresh")


def test_a_path_that_is_a_file_is_not_taken_for_a_directory(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"")
    with pytest.raises(FileExistsError):
        make_dirs(tmp_path / "f")


def test_an_owned_directory_left_open_is_tightened_and_its_parent_is_not(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    data.mkdir(mode=0o755)
    tmp_path.chmod(0o755)
    own_dir(data)
    assert (mode(data), mode(tmp_path)) == (0o700, 0o755)


def test_a_directory_that_cannot_be_tightened_is_logged_and_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    data = tmp_path / "data"
    data.mkdir(mode=0o755)

    def refuse(path: Path, mode: int) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "chmod", refuse)
    with caplog.at_level(logging.WARNING, "sessionq.store"):
        own_dir(data)
    assert f"cannot make {data} owner-only (mode 755)" in caplog.text


@pytest.mark.parametrize("mask", [0o000, 0o022])
def test_every_file_made_is_0600_and_a_public_one_0644(tmp_path: Path, mask: int) -> None:
    with umask(mask):
        os.close(open_file(tmp_path / "lock", os.O_RDWR))
        create_file(tmp_path / "empty")
        write_file(tmp_path / "written", b"secret", fsync=True)
        copy_file(tmp_path / "written", tmp_path / "copied")
        write_file(tmp_path / "key.pub", b"public", public=True)
    for name in ("lock", "empty", "written", "copied"):
        assert mode(tmp_path / name) == 0o600, name
    assert mode(tmp_path / "key.pub") == 0o644
    assert (tmp_path / "copied").read_bytes() == b"secret"


def test_an_existing_file_keeps_its_mode_and_its_bytes(tmp_path: Path) -> None:
    kept = tmp_path / "kept"
    kept.write_bytes(b"x")
    kept.chmod(0o640)
    create_file(kept)
    assert (mode(kept), kept.read_bytes()) == (0o640, b"x")


def test_a_writers_database_and_its_wal_are_owner_only(tmp_path: Path) -> None:
    with umask(0o000):
        conn = connect(tmp_path / "store.sqlite3")
    try:
        conn.execute("CREATE TABLE t (x)")
        conn.execute("INSERT INTO t VALUES ('a caller token')")
        names = ("store.sqlite3", "store.sqlite3-wal", "store.sqlite3-shm")
        assert {n: mode(tmp_path / n) for n in names} == dict.fromkeys(names, 0o600)
    finally:
        conn.close()
