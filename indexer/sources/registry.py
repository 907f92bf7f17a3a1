"""Which logs the processes sharing a data dir ask to have watched.

Every process started with ``--sessions`` (``serve``, ``mcp``) registers its roots: one
file ``watch/<pid>-<n>.json`` under the data dir, on which it holds a shared ``flock``
for as long as it lives. Whichever process holds the writer lease watches the union of
the live registrations, so three agent windows with different ``--sessions`` all see
their logs indexed, whoever writes. A registration whose process is gone (its file can
be locked exclusively: the kernel released the holder's lock) is removed by the next
writer that looks.

After the writer's first complete scan that includes a registration's roots it marks
the registration *scanned* (``<name>.scanned`` beside it): that is when the registering
process is ready to answer (its logs are in the store, whoever applied them).
"""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import json
import logging
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final, get_args

from indexer.logs.importers.detect import LogFormat
from indexer.logs.watch import WatchRoot
from indexer.store.layout import watch_dir
from indexer.store.private import create_file, make_dirs, write_file

log = logging.getLogger("sessionq.sources")
SUFFIX: Final = ".json"
SCANNED_SUFFIX: Final = ".scanned"
_counter = itertools.count()


@dataclass(frozen=True, slots=True)
class Registration:
    """One process's request to have roots watched."""

    name: str
    pid: int
    roots: tuple[WatchRoot, ...]


def _encode(roots: Sequence[WatchRoot]) -> bytes:
    return json.dumps(
        {"pid": os.getpid(), "roots": [{"path": str(r.path), "format": r.format} for r in roots]}
    ).encode()


def _decode(name: str, data: bytes) -> Registration | None:
    try:
        obj = json.loads(data)
        roots = tuple(WatchRoot(Path(r["path"]), _format(r.get("format"))) for r in obj["roots"])
        return Registration(name, int(obj["pid"]), roots)
    except (ValueError, KeyError, TypeError):
        return None


def _format(value: object) -> LogFormat | None:
    formats: tuple[str, ...] = get_args(LogFormat)
    return value if isinstance(value, str) and value in formats else None  # type: ignore[return-value]


class OwnRegistration:
    """This process's registration: held (its lock keeps it live) until ``close``."""

    def __init__(self, directory: Path, roots: Sequence[WatchRoot]) -> None:
        make_dirs(directory)
        self.name = f"{os.getpid()}-{next(_counter)}"
        self.path = directory / f"{self.name}{SUFFIX}"
        self.roots = tuple(roots)
        tmp = directory / f".{self.name}.tmp"
        write_file(tmp, _encode(roots))
        fd = os.open(tmp, os.O_RDWR | os.O_CLOEXEC)
        fcntl.flock(fd, fcntl.LOCK_SH)
        os.replace(tmp, self.path)  # visible only once it is locked
        self._fd: int | None = fd

    @property
    def scanned(self) -> bool:
        return self.path.with_suffix(SCANNED_SUFFIX).exists()

    def close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        for path in (self.path, self.path.with_suffix(SCANNED_SUFFIX)):
            with contextlib.suppress(OSError):
                path.unlink()
        os.close(fd)


class Registry:
    """The registrations of one data dir (module docstring)."""

    def __init__(self, data_dir: Path) -> None:
        self.directory = watch_dir(data_dir)

    def register(self, roots: Sequence[WatchRoot]) -> OwnRegistration:
        return OwnRegistration(self.directory, roots)

    def live(self) -> list[Registration]:
        """Every live registration, oldest name first; dead ones are removed."""
        try:
            names = sorted(n for n in os.listdir(self.directory) if n.endswith(SUFFIX))
        except FileNotFoundError:
            return []
        out: list[Registration] = []
        for name in names:
            path = self.directory / name
            try:
                fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
            except OSError:
                continue  # removed meanwhile
            try:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:  # held shared: its process lives
                    reg = _decode(name.removesuffix(SUFFIX), os.read(fd, 1 << 20))
                    if reg is not None:
                        out.append(reg)
                    continue
                self._remove(path)  # nobody holds it: its process is gone
            finally:
                os.close(fd)
        return out

    def _remove(self, path: Path) -> None:
        for p in (path, path.with_suffix(SCANNED_SUFFIX)):
            with contextlib.suppress(OSError):
                p.unlink()
        log.info("removed the watch registration of a process that ended (%s)", path.name)

    def mark_scanned(self, names: Iterable[str]) -> None:
        for name in names:
            path = self.directory / f"{name}{SCANNED_SUFFIX}"
            if (self.directory / f"{name}{SUFFIX}").exists() and not path.exists():
                with contextlib.suppress(OSError):
                    create_file(path)


def union(registrations: Iterable[Registration]) -> tuple[WatchRoot, ...]:
    """Every distinct root of the registrations, in registration order."""
    seen: dict[WatchRoot, None] = {}
    for reg in registrations:
        for root in reg.roots:
            seen.setdefault(root, None)
    return tuple(seen)
