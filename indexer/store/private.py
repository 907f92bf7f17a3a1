"""Owner-only files and directories: whatever sessionq makes that holds or guards session
data (data dirs, their databases, locks and lease, snapshots, restores, node dirs, keys)
is 0700 if a directory and 0600 if a file, whatever the process umask. Every creation
site asks this module; none passes a mode of its own.

* A directory is made 0700 and then set to exactly 0700 (``mkdir``'s mode is masked by
  the umask, which may also take the owner's own bits). Each missing parent is made the
  same way; a directory that exists already is never changed by ``make_dirs``, so
  ``--data ~/sq/data`` leaves ``~`` as it is.
* A directory sessionq owns (``own_dir``: a writer's data dir, a node dir, a restore's
  target) is also tightened to 0700 when it is more open, as an older release left it
  (0755): other users then reach nothing below it, whatever the files' own modes.
* A file is created with mode 0600 by ``os.open``, whose mode the umask can only narrow.
  A file that exists keeps its mode: it lies in a 0700 directory. A public key or a
  keyring (``public``) is 0644: others read it, only its owner writes it.
* SQLite gives a database's ``-wal`` and ``-shm`` the database file's bits, so
  ``create_file`` makes the database file before SQLite opens it.
* Tantivy writes its segment files with ``0666 & ~umask``; the 0700 directories above
  them bar other users, so they are left as Tantivy makes them (a umask is per process:
  narrowing it around the index writer would change every other thread's files too).
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import shutil
import stat
from pathlib import Path
from typing import Final

log = logging.getLogger("sessionq.store")

DIR_MODE: Final = 0o700
FILE_MODE: Final = 0o600
PUBLIC_FILE_MODE: Final = 0o644


def make_dirs(path: Path) -> None:
    """``path`` and its missing parents, each made 0700 (module docstring); a directory
    that exists is left as it is. ``FileExistsError`` when ``path`` is not a directory."""
    missing: list[Path] = []
    here = path
    while not os.path.lexists(here):
        missing.append(here)
        here = here.parent
    for directory in reversed(missing):
        try:
            os.mkdir(directory, DIR_MODE)
        except FileExistsError:
            continue  # another process made it meanwhile, the same way
        os.chmod(directory, DIR_MODE)
    if not path.is_dir():
        raise FileExistsError(errno.EEXIST, "exists and is not a directory", str(path))


def make_dir(path: Path) -> None:
    """One new directory, 0700; ``FileExistsError`` when ``path`` exists (the caller's
    claim on a fresh name)."""
    os.mkdir(path, DIR_MODE)
    os.chmod(path, DIR_MODE)


def own_dir(path: Path) -> None:
    """A directory sessionq owns: made as ``make_dirs`` makes it, or, when it exists and
    others may enter or read it, set to 0700. A dir this user may not change (another
    user's, a read-only mount) is logged and left; its writer goes on."""
    make_dirs(path)
    current = stat.S_IMODE(os.stat(path).st_mode)
    if current == DIR_MODE:
        return
    try:
        os.chmod(path, DIR_MODE)
    except OSError as exc:
        log.warning(
            "cannot make %s owner-only (mode %o): %s; other users may read it",
            path,
            current,
            exc.strerror or exc,
        )


def open_file(path: Path, flags: int = os.O_WRONLY | os.O_TRUNC, *, public: bool = False) -> int:
    """``os.open(path, flags)``, creating the file 0600 (0644 when ``public``) when it is
    missing; a descriptor the caller closes."""
    mode = PUBLIC_FILE_MODE if public else FILE_MODE
    return os.open(path, flags | os.O_CREAT | os.O_CLOEXEC, mode)


def create_file(path: Path) -> None:
    """An empty 0600 file at ``path`` unless one is there (it is then left as it is)."""
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, FILE_MODE))


def write_file(path: Path, data: bytes, *, fsync: bool = False, public: bool = False) -> None:
    """``path`` holding ``data``, created as ``open_file`` creates it; ``fsync`` makes the
    bytes durable before it returns (the caller renames the file into place after)."""
    with os.fdopen(open_file(path, public=public), "wb") as out:
        out.write(data)
        if fsync:
            out.flush()
            os.fsync(out.fileno())


def copy_file(src: Path, dst: Path) -> None:
    """``dst`` created 0600 (or truncated), then the bytes of ``src`` copied by the kernel
    (``shutil.copyfile``, which keeps the mode of a file that exists)."""
    os.close(open_file(dst))
    shutil.copyfile(src, dst)
