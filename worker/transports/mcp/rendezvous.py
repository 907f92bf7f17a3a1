"""Where an agent window's thin ``sessionq mcp`` (the front, ``worker.cli.mcp_front``) meets
the one process that serves every window of a data dir (the daemon,
``worker.cli.mcp_daemon``). Standard library only: the front imports this and little else.

* **Place.** ``<data>/mcp/`` (``MCP_DIR_NAME``, owner-only, as the data dir): per daemon *key*,
  ``<key>.sock`` (its Unix socket), ``<key>.lock`` (an exclusive ``flock`` held for the
  daemon's life: the kernel releases it when the daemon ends, ``kill -9`` included) and
  ``<key>.log`` (its log once it runs). The key is a digest of everything the daemon's
  settings come from — the flags and ``SESSIONQ_*`` variables a window gave, minus the
  window's own (its caller), with paths made absolute — and of the code that runs it,
  so windows whose servers are configured alike share one daemon and a window
  configured otherwise (or running other code) gets its own.
* **Hello.** Once per connection, before the MCP byte stream: the front sends one JSON
  line (``Hello``: what identifies its window), the daemon answers one JSON line
  (``{"ok": true, "pid": N}``, or ``{"ok": false, "error": "..."}``). After that the
  connection carries the agent's MCP stdio stream unchanged, both ways.
* **Address.** A Unix socket's path is at most about 100 bytes; a longer one is reached
  through the directory's descriptor (``/proc/self/fd/N/<name>``, Linux).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import socket
import struct
import sys
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Final

from indexer.store.layout import MCP_DIR_NAME

PROTOCOL: Final = "sessionq-mcp-window/1"
MAX_HELLO_BYTES: Final = 64 * 1024
MAX_SUN_PATH: Final = 100


@dataclass(frozen=True, slots=True)
class Place:
    """The files of one daemon key (module docstring)."""

    directory: Path
    key: str

    @classmethod
    def of(cls, data: Path, key: str) -> Place:
        return cls(data / MCP_DIR_NAME, key)

    @property
    def socket(self) -> Path:
        return self.directory / f"{self.key}.sock"

    @property
    def lock(self) -> Path:
        return self.directory / f"{self.key}.lock"

    @property
    def log(self) -> Path:
        return self.directory / f"{self.key}.log"


def daemon_key(settings: Mapping[str, Any], environ: Mapping[str, str], code: str) -> str:
    """The key of the daemon serving windows configured by ``settings`` (the given
    flags, JSON values) and ``environ`` (the ``SESSIONQ_*`` variables that count)."""
    blob = json.dumps(
        {"settings": settings, "env": dict(environ), "code": code, "protocol": PROTOCOL},
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


def code_identity() -> str:
    """What the daemon's code is: the interpreter and where the ``worker`` package lies,
    with the newest modification time of the MCP modules (an edited checkout starts a
    new daemon; the old one ends when its windows have)."""
    here = Path(__file__).resolve().parent
    cli = here.parent / "cli"
    newest = max((p.stat().st_mtime_ns for d in (here, cli) for p in d.glob("*.py")), default=0)
    return f"{sys.executable}|{here.parent}|{newest}"


@dataclass(frozen=True, slots=True)
class Hello:
    """What identifies a front's window, sent once before its stream."""

    cwd: str
    caller: str | None
    hints: list[list[str]]  # [variable, session id] pairs (``worker.transports.mcp.window``)
    started_ms: int
    pid: int
    resumed: bool = False  # a reconnection after the daemon was lost
    protocol: str = PROTOCOL

    def line(self) -> bytes:
        return json.dumps(asdict(self)).encode() + b"\n"

    @classmethod
    def parse(cls, line: bytes) -> Hello:
        """The hello of a line; ``ValueError`` naming what is wrong."""
        obj = json.loads(line)
        if not isinstance(obj, dict) or obj.get("protocol") != PROTOCOL:
            raise ValueError(f"not a {PROTOCOL} hello")
        cwd, caller, hints = obj.get("cwd"), obj.get("caller"), obj.get("hints", [])
        if not isinstance(cwd, str) or not cwd.startswith("/"):
            raise ValueError("the hello names no absolute cwd")
        if caller is not None and (not isinstance(caller, str) or not caller):
            raise ValueError("the hello's caller is not a session id")
        pairs = hints if isinstance(hints, list) else []
        ok = [[str(p[0]), str(p[1])] for p in pairs if isinstance(p, list) and len(p) == 2]
        started, pid = obj.get("started_ms"), obj.get("pid")
        return cls(
            cwd,
            caller,
            ok,
            started if isinstance(started, int) else 0,
            pid if isinstance(pid, int) else 0,
            obj.get("resumed") is True,
        )


def answer(pid: int, error: str | None = None) -> bytes:
    body: dict[str, Any] = {"ok": True, "pid": pid}
    if error is not None:
        body = {"ok": False, "error": error}
    return json.dumps(body).encode() + b"\n"


@contextlib.contextmanager
def address(path: Path) -> Iterator[str]:
    """A name ``bind``/``connect`` accept for the socket at ``path`` (module docstring)."""
    if len(os.fsencode(str(path))) <= MAX_SUN_PATH or not os.path.isdir("/proc/self/fd"):
        yield str(path)
        return
    fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        yield f"/proc/self/fd/{fd}/{path.name}"
    finally:
        os.close(fd)


def peer_is_owner(sock: socket.socket) -> bool:
    """Whether the process at the other end runs as this user (Linux ``SO_PEERCRED``;
    elsewhere the owner-only directory is the guard)."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return True
    creds = sock.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", creds)
    return bool(uid == os.getuid())


class Handshake:
    """The window's ``initialize`` request and ``notifications/initialized`` as sent,
    to replay to a new daemon (``worker.cli.mcp_front``, step 4)."""

    def __init__(self) -> None:
        self._buffer = b""
        self._lines: list[bytes] = []
        self._done = False

    def feed(self, chunk: bytes) -> None:
        if self._done:
            return
        self._buffer += chunk
        while not self._done and b"\n" in self._buffer:
            line, self._buffer = self._buffer.split(b"\n", 1)
            try:
                method = json.loads(line).get("method")
            except (ValueError, AttributeError):
                method = None
            if not self._lines and method != "initialize":
                self._done = True  # a client without the handshake: nothing to replay
            elif method in ("initialize", "notifications/initialized"):
                self._lines.append(line + b"\n")
                self._done = method == "notifications/initialized"
        if self._done:
            self._buffer = b""

    def replay(self) -> tuple[bytes, int]:
        """The lines to send again and how many answers they bring (to withhold)."""
        return b"".join(self._lines), 1 if self._lines else 0
