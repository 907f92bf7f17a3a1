"""The writer lease: exactly one process writes a data dir at a time.

Any number of processes share one data dir (``serve``, ``mcp`` servers, ``ingest``,
``stats``, ``call --data``, ``snapshot create``); they read it freely (Tantivy reader
reloads, SQLite WAL), and the one holding the lease writes it. The lease is an exclusive
``flock`` on ``writer.lock``: the kernel releases it when the holder ends, ``kill -9``
included, so a dead writer never blocks the dir. The holder records who it is in
``writer.json`` (pid, role, since), for messages only; the lock alone decides.

Two kinds of writer take the lease:

* a **standing** writer (``serve``, ``mcp --sessions``) holds it for as long as it runs
  and, between batches, hands it over when someone waits (``wanted``); a standing
  process without the lease is a standby and tries to take it over about once a second,
  but never while a one-shot writer waits;
* a **one-shot** writer (``ingest``, an admin delete of a standby ``serve``) queues
  (a shared ``flock`` on ``writer.queue``, which is what ``wanted`` sees), waits for the
  lease, writes, and releases it.

A Kafka indexer is a standing writer that never hands over: its data dir is a replica
of a topic, not a place other writers add to.

A queued writer proves it is still coming: it touches ``writer.queue`` at least every
``QUEUE_BEAT_S`` while it waits, and a standing writer defers only to a queue touched
within ``QUEUE_STALE_S``. One that stops proceeding (stopped with Ctrl-Z, under a
debugger) stops blocking the standing writers after that bound: they write meanwhile
(and say so), and it gets its turn as soon as it runs again (its next touch). Who is
queued is the kernel's list of ``writer.queue``'s locks (``/proc/locks``, Linux); where
there is none, the queue's processes go unnamed.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

from indexer.errors import INVALID_CONFIG, SessionqError
from indexer.store.layout import WRITER_INFO_NAME, WRITER_LOCK_NAME, WRITER_QUEUE_NAME
from indexer.store.private import make_dirs, open_file, write_file

Role = Literal["serve", "mcp", "ingest", "indexer", "delete"]


class DataDirBusyError(SessionqError):
    """Another process writes the data dir and will not hand it over (a Kafka indexer
    needs a data dir of its own)."""

    code = INVALID_CONFIG


HANDS_OVER: Final[frozenset[str]] = frozenset({"serve", "mcp"})
WAIT_STEP_S: Final = 0.05  # a one-shot writer's retry interval while it waits
QUEUE_BEAT_S: Final = 1.0  # a queued writer touches writer.queue at least this often
QUEUE_STALE_S: Final = 5.0  # a queue untouched this long holds only stalled writers
Queue = Literal["empty", "waiting", "stalled"]


@dataclass(frozen=True, slots=True)
class Holder:
    """Who holds the lease, as it recorded itself."""

    pid: int
    role: str
    since: float

    def describe(self) -> str:
        return f"sessionq {self.role}, pid {self.pid}"


def _try_lock(fd: int, mode: int) -> bool:
    try:
        fcntl.flock(fd, mode | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


class WriterLease:
    """This process's side of one data dir's writer lease (module docstring)."""

    def __init__(self, data_dir: Path, role: Role) -> None:
        self.data_dir = data_dir
        self.role = role
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def _open(self, name: str) -> int:
        make_dirs(self.data_dir)
        return open_file(self.data_dir / name, os.O_RDWR)

    def try_acquire(self) -> bool:
        """Take the lease if it is free; True when this process holds it now."""
        if self._fd is not None:
            return True
        fd = self._open(WRITER_LOCK_NAME)
        if not _try_lock(fd, fcntl.LOCK_EX):
            os.close(fd)
            return False
        self._fd = fd
        self._record()
        return True

    def _record(self) -> None:
        info = {"pid": os.getpid(), "role": self.role, "since": time.time()}
        path = self.data_dir / WRITER_INFO_NAME
        tmp = path.with_name(f".{path.name}.{os.getpid()}")
        with contextlib.suppress(OSError):  # the record is for messages only
            write_file(tmp, json.dumps(info).encode())
            os.replace(tmp, path)

    def acquire_or_fail(self) -> None:
        """Take the lease for good, or raise ``DataDirBusyError`` naming the holder."""
        if self.try_acquire():
            return
        holder = self.holder()
        who = holder.describe() if holder is not None else "another process"
        raise DataDirBusyError(
            f"{self.data_dir} is written by {who}: a data dir has one writer; give this"
            f" {self.role} a data dir of its own"
        )

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)  # closing the only descriptor releases the lock

    def holder(self) -> Holder | None:
        """The process that holds the lease, or None when it is free (or held by this
        one). Read from ``writer.json``; the lock is probed, never taken for long."""
        if self._fd is not None:
            return None
        fd = self._open(WRITER_LOCK_NAME)
        try:
            if _try_lock(fd, fcntl.LOCK_EX):
                return None  # free (closing the descriptor releases the probe)
        finally:
            os.close(fd)
        try:
            info = json.loads((self.data_dir / WRITER_INFO_NAME).read_text())
            return Holder(int(info["pid"]), str(info["role"]), float(info["since"]))
        except (OSError, ValueError, KeyError, TypeError):
            return Holder(0, "process", 0.0)

    def wanted(self) -> bool:
        """Whether a one-shot writer waits for the lease and is still coming."""
        return self.queue() == "waiting"

    def queue(self) -> Queue:
        """``writer.queue``: nobody holds it (an exclusive probe succeeds), or one-shot
        writers wait in it, lately touched ("waiting") or not ("stalled")."""
        fd = self._open(WRITER_QUEUE_NAME)
        try:
            if _try_lock(fd, fcntl.LOCK_EX):
                return "empty"
            touched = os.fstat(fd).st_mtime
            return "waiting" if time.time() - touched < QUEUE_STALE_S else "stalled"
        finally:
            os.close(fd)

    def queued_pids(self) -> tuple[int, ...]:
        """The processes queued in ``writer.queue``, as the kernel lists its shared
        ``flock``s (empty where ``/proc/locks`` is not there)."""
        try:
            st = os.stat(self.data_dir / WRITER_QUEUE_NAME)
            table = Path("/proc/locks").read_text()
        except OSError:
            return ()
        where = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
        rows = (line.split() for line in table.splitlines())
        pids = {int(f[4]) for f in rows if _read_flock(f, where)}
        return tuple(sorted(pids))

    @contextlib.contextmanager
    def turn(
        self,
        *,
        on_wait: Callable[[Holder], None] | None = None,
        cancelled: Callable[[], bool] | None = None,
    ) -> Iterator[bool]:
        """A one-shot writer's turn: queue, wait for the lease, hold it for the block,
        release it. ``on_wait`` is told once who holds it when the lease is not free at
        once; ``cancelled`` ends the wait early (the block then sees False)."""
        queue = self._open(WRITER_QUEUE_NAME)
        try:
            fcntl.flock(queue, fcntl.LOCK_SH)
            os.utime(queue)  # still coming (module docstring), and again every beat
            told, touched = False, time.monotonic()
            while not self.try_acquire():
                if cancelled is not None and cancelled():
                    break
                if time.monotonic() - touched >= QUEUE_BEAT_S:
                    os.utime(queue)
                    touched = time.monotonic()
                if not told and on_wait is not None:
                    holder = self.holder()
                    if holder is not None:
                        on_wait(holder)
                        told = True
                time.sleep(WAIT_STEP_S)
        finally:
            os.close(queue)
        try:
            yield self.held
        finally:
            self.release()


def _read_flock(fields: list[str], where: str) -> bool:
    """A ``/proc/locks`` row of a shared ``flock`` on the file at ``where``
    (``major:minor:inode``), with its holder's pid."""
    return (
        len(fields) > 5
        and fields[1:4] == ["FLOCK", "ADVISORY", "READ"]
        and fields[5] == where
        and fields[4].isdigit()
    )
