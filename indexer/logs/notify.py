"""Which paths under some roots changed: the operating system's file notifications
(inotify on Linux, FSEvents, ReadDirectoryChangesW) through ``watchfiles`` (Rust
``notify`` underneath), so a watcher costs nothing while nothing changes.

Notifications are not available everywhere: a network file system (NFS, SMB, sshfs, …)
does not report changes made by other machines, and the kernel may refuse more watches
(``fs.inotify.max_user_watches``). There the notifier polls the roots' metadata instead
(in Rust, every ``poll_delay_ms``), chosen automatically per root set and said in the
log once. ``force_polling`` forces it (tests, odd file systems).

The notifier runs in a thread of its own; ``wait`` hands the paths seen since the last
call to the event loop. A change is reported within about ``DEBOUNCE_MS`` +
``STEP_MS``. The caller maps paths to logs: a path it tracks is read again, anything
else (a new file or directory, a rename, a removed directory) asks for the roots to be
walked again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

log = logging.getLogger("sessionq.watch")

DEBOUNCE_MS: Final = 100  # the longest a burst of changes is gathered before it is handed on
STEP_MS: Final = 50  # how often the Rust side looks for gathered changes
RUST_TIMEOUT_MS: Final = 1000  # the watch call returns at least this often (to see a stop)
POLL_MS_PER_1000_PATHS: Final = 500  # polling: a delay that grows with the tree
POLL_MIN_MS: Final = 1000
POLL_MAX_MS: Final = 10_000
# File systems that do not report changes made elsewhere: watched by polling.
NETWORK_FILE_SYSTEMS: Final = frozenset(
    {
        "nfs",
        "nfs4",
        "cifs",
        "smb",
        "smb3",
        "smbfs",
        "9p",
        "afs",
        "ceph",
        "glusterfs",
        "lustre",
        "davfs",
        "fuse.sshfs",
        "fuse.rclone",
        "fuse.s3fs",
        "fuse.gcsfuse",
    }
)

Mode = Literal["notify", "poll"]


def _mounts() -> list[tuple[str, str]]:
    """(mount point, file system type) of every mount, longest mount point first."""
    try:
        lines = Path("/proc/mounts").read_text().splitlines()
    except OSError:
        return []
    out = []
    for line in lines:
        parts = line.split()
        if len(parts) >= 3:
            out.append((parts[1].replace("\\040", " "), parts[2]))
    return sorted(out, key=lambda m: len(m[0]), reverse=True)


def file_system_of(path: Path, mounts: Sequence[tuple[str, str]] | None = None) -> str | None:
    """The type of the file system ``path`` is on (Linux ``/proc/mounts``), or None."""
    resolved = str(path.resolve())
    for point, fstype in mounts if mounts is not None else _mounts():
        if resolved == point or resolved.startswith(point.rstrip("/") + "/"):
            return fstype
    return None


def _count_entries(roots: Sequence[Path], cap: int = 200_000) -> int:
    n = 0
    for root in roots:
        for _dirpath, dirnames, filenames in os.walk(root):
            n += len(dirnames) + len(filenames)
            if n >= cap:
                return n
    return n


def poll_delay_ms(roots: Sequence[Path]) -> int:
    """A polling interval that keeps the cost of a poll pass near 1 % of a core."""
    entries = _count_entries(roots)
    return max(POLL_MIN_MS, min(POLL_MAX_MS, entries * POLL_MS_PER_1000_PATHS // 1000))


@dataclass(frozen=True, slots=True)
class Plan:
    """How the roots are watched, and why (logged once)."""

    mode: Mode
    reason: str
    poll_delay_ms: int = 0


def plan_for(
    roots: Sequence[Path],
    *,
    force_polling: bool = False,
    mounts: Sequence[tuple[str, str]] | None = None,
) -> Plan:
    """Notifications, unless asked not to or a root is on a network file system
    (``mounts``: this machine's, from ``/proc/mounts``)."""
    if force_polling:
        return Plan("poll", "polling was asked for", poll_delay_ms(roots))
    mounts = _mounts() if mounts is None else mounts
    remote = [(r, fs) for r in roots if (fs := file_system_of(r, mounts)) in NETWORK_FILE_SYSTEMS]
    if remote:
        where = ", ".join(f"{r} ({fs})" for r, fs in remote)
        return Plan("poll", f"{where}: a network file system does not notify", poll_delay_ms(roots))
    return Plan("notify", "file notifications")


class ChangeNotifier:
    """Paths that changed under ``roots`` (module docstring). Start it, ``await
    wait(timeout)`` for changes, ``close()`` it; not restartable."""

    def __init__(self, roots: Sequence[Path], *, force_polling: bool = False) -> None:
        self.roots = [Path(r) for r in roots]
        self.plan = plan_for(self.roots, force_polling=force_polling)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ready = asyncio.Event()
        self._lock = threading.Lock()
        self._changed: set[Path] = set()
        self.failed: str | None = None  # why the watcher thread stopped (it restarts polling)

    @property
    def mode(self) -> Mode:
        return self.plan.mode

    def start(self) -> None:
        """Start watching. Changes from this moment on are reported."""
        self._loop = asyncio.get_running_loop()
        watcher = self._open()
        self._thread = threading.Thread(
            target=self._run, args=(watcher,), name="sessionq-notify", daemon=True
        )
        self._thread.start()

    def _open(self) -> object:
        from watchfiles._rust_notify import RustNotify

        roots = [str(r) for r in self.roots]
        plan = self.plan
        try:
            watcher = RustNotify(roots, False, plan.mode == "poll", plan.poll_delay_ms, True, True)
        except (OSError, RuntimeError) as exc:
            if plan.mode == "poll":
                raise
            self.plan = Plan(
                "poll", f"file notifications failed ({exc})", poll_delay_ms(self.roots)
            )
            watcher = RustNotify(roots, False, True, self.plan.poll_delay_ms, True, True)
        if self.plan.mode == "notify":
            log.info("watching %s with %s", ", ".join(roots), self.plan.reason)
        else:
            log.warning(
                "watching %s by polling every %.1f s: %s",
                ", ".join(roots),
                self.plan.poll_delay_ms / 1000,
                self.plan.reason,
            )
        return watcher

    def _run(self, watcher: object) -> None:
        try:
            while not self._stop.is_set():
                raw = watcher.watch(DEBOUNCE_MS, STEP_MS, RUST_TIMEOUT_MS, self._stop)  # type: ignore[attr-defined]
                if isinstance(raw, set) and raw:
                    with self._lock:
                        self._changed.update(Path(p) for _change, p in raw)
                    self._wake()
        except Exception as exc:  # the watcher broke (e.g. a root removed): say so, once
            self.failed = f"{type(exc).__name__}: {exc}"
            log.warning("file watcher stopped: %s", self.failed)
            self._wake()
        finally:
            with contextlib.suppress(Exception):
                watcher.close()  # type: ignore[attr-defined]

    def _wake(self) -> None:
        loop = self._loop
        if loop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                loop.call_soon_threadsafe(self._ready.set)

    async def wait(self, timeout: float) -> set[Path]:
        """The paths changed since the last call; waits up to ``timeout`` seconds for
        the first one (an empty set: nothing changed meanwhile)."""
        if not self._pending():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._ready.wait(), timeout)
        self._ready.clear()
        with self._lock:
            changed, self._changed = self._changed, set()
        return changed

    def _pending(self) -> bool:
        with self._lock:
            return bool(self._changed)

    def close(self) -> None:
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(timeout=2 * RUST_TIMEOUT_MS / 1000)
