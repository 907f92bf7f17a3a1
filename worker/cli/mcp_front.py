"""The thin ``sessionq mcp`` an agent window starts (stdio over a data dir): it relays the
window's MCP stdio byte stream to the one daemon that serves every window configured
alike (``worker.cli.mcp_daemon``), starting that daemon when none runs. The front loads
neither the MCP SDK nor the store: the standard library, the door's checks and the
rendezvous (``worker.transports.mcp.rendezvous``, where front and daemon meet).

1. route — only a stdio server over a data dir (``--data`` / ``SESSIONQ_DATA``, no
   ``--bootstrap``, ``--transport stdio``, the flag before the variable as for every
   setting) goes through a daemon; any other runs in the process
   (``worker.cli.mcp_command``), as does one over a data dir that has no store yet
   and no ``--sessions`` (that process says why it cannot serve);
2. the door — ``--sessions`` paths exist, the data dir is made or checked
   (``worker.cli.door``), then ``<data>/mcp/`` (owner-only);
3. the daemon — connect to ``<key>.sock`` and send the window's hello (its cwd, its
   caller, the agent's session variables, when it started); when nothing answers, take
   ``<key>.lock`` (held: a daemon is starting or ending, so wait for it) and start the
   daemon, handing it the lock, so two fronts starting at once start one daemon; what the
   daemon prints until it is ready is printed here (its failure's line and exit status
   are this command's);
4. relay — stdin to the socket and the socket to stdout, byte for byte, until the agent
   closes stdin and the daemon has answered. If the daemon is lost meanwhile, the front
   connects again (a new daemon if need be) and replays the window's ``initialize``
   handshake, its answer withheld from the agent; a call in flight at that moment is
   not answered (the agent's own timeout or cancel ends it).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import fcntl
import json
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from indexer.environment import ENV_PREFIX, env_name
from indexer.store.layout import sqlite_path
from indexer.store.private import make_dirs, open_file
from worker.cli import door
from worker.cli.exits import EXIT_FAILED
from worker.transports.mcp.rendezvous import (
    Handshake,
    Hello,
    Place,
    address,
    code_identity,
    daemon_key,
)
from worker.transports.mcp.window import SESSION_VARIABLES, session_hints

READY: Final = b"sessionq-mcp-daemon-ready\n"
START_S: Final = 120.0  # the longest a front waits for a daemon to start (or to end)
POLL_S: Final = 0.05  # how often it looks again meanwhile
HELLO_S: Final = 30.0  # the longest a daemon takes to answer a hello
CHUNK: Final = 1 << 16
WINDOW_SETTINGS: Final = frozenset({"caller"})  # a window's own: never part of the key
# Variables a daemon must not inherit from the window that started it.
WINDOW_VARIABLES: Final = frozenset({env_name("caller"), *SESSION_VARIABLES, "CLAUDE_PROJECT_DIR"})


def _given(args: argparse.Namespace, environ: Mapping[str, str], name: str) -> Any:
    value = getattr(args, name, None)
    return value if value is not None else environ.get(env_name(name))


def daemon_target(args: argparse.Namespace, environ: Mapping[str, str]) -> Path | None:
    """The data dir whose daemon serves this window, or None (step 1)."""
    data = _given(args, environ, "data")
    if not data or _given(args, environ, "bootstrap"):
        return None
    if (_given(args, environ, "transport") or "stdio") != "stdio":
        return None
    path = Path(os.path.expanduser(data)).absolute()
    if not _given(args, environ, "sessions") and not sqlite_path(path).exists():
        return None
    return path


def _settings(args: argparse.Namespace) -> dict[str, Any]:
    """The flags given, as JSON values, paths absolute, without the window's own."""
    out: dict[str, Any] = {}
    for name, value in vars(args).items():
        if name not in WINDOW_SETTINGS:
            out[name] = [_json(v) for v in value] if isinstance(value, list) else _json(value)
    return out


def _json(value: Any) -> Any:
    return str(Path(os.path.expanduser(value)).absolute()) if isinstance(value, Path) else value


def run_front(args: argparse.Namespace, data: Path) -> int:
    """Steps 2-4 of the module docstring; the exit status."""
    if _given(args, os.environ, "sessions"):
        door.session_roots("mcp", getattr(args, "sessions", None) or [])
        door.data_dir("mcp", data)
    settings = _settings(args)
    environ = {
        k: v
        for k, v in os.environ.items()
        if k.startswith(ENV_PREFIX) and k not in WINDOW_VARIABLES
    }
    place = Place.of(data, daemon_key(settings, environ, code_identity()))
    make_dirs(place.directory)
    caller = _given(args, os.environ, "caller") or None
    hello = Hello(
        os.getcwd(),
        caller,
        [list(pair) for pair in session_hints(os.environ)],
        int(time.time() * 1000),
        os.getpid(),
    )
    front = Front(place, hello, settings)
    signal.signal(signal.SIGTERM, _interrupt)  # the agent ends its server: as Ctrl-C does
    try:
        return front.run()
    except KeyboardInterrupt:
        return 0  # the daemon goes on serving the other windows


def _interrupt(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt


class StartError(Exception):
    """The daemon could not start: its exit status (its output was printed)."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


class Front:
    """One window's relay (module docstring, steps 3-4)."""

    def __init__(self, place: Place, hello: Hello, settings: dict[str, Any]) -> None:
        self.place = place
        self.hello = hello
        self.settings = settings
        self.link = _Link()
        self.handshake = Handshake()

    def run(self) -> int:
        try:
            sock, extra = self._connect_or_start(resumed=False)
        except StartError as exc:
            return exc.status
        except TimeoutError as exc:
            print(f"sessionq mcp: {exc}", file=sys.stderr, flush=True)
            return EXIT_FAILED
        print(
            f"sessionq mcp: served by the MCP daemon of {self.place.directory.parent}"
            f" (its log: {self.place.log})",
            file=sys.stderr,
            flush=True,
        )
        threading.Thread(target=self._pump_stdin, name="stdin", daemon=True).start()
        skip = 0
        while True:
            self.link.install(sock)
            if not self._pump_socket(sock, extra, skip):
                return 0  # the agent is gone (stdout closed)
            self.link.lost(sock)
            if self.link.stdin_closed:
                return 0
            print(
                f"sessionq mcp: the MCP daemon ended; connecting again (log: {self.place.log})",
                file=sys.stderr,
                flush=True,
            )
            try:
                sock, extra, skip = self._resume()
            except StartError:
                return EXIT_FAILED
            except TimeoutError as exc:
                print(f"sessionq mcp: {exc}", file=sys.stderr, flush=True)
                return EXIT_FAILED

    def _resume(self) -> tuple[socket.socket, bytes, int]:
        """A new connection with the window's handshake replayed, and how many of the
        daemon's lines answer it (withheld from the agent)."""
        lines, skip = self.handshake.replay()
        while True:
            sock, extra = self._connect_or_start(resumed=True)
            try:
                sock.sendall(lines)
            except OSError:
                sock.close()
                continue
            return sock, extra, skip

    # ---- the daemon ---------------------------------------------------------------------
    def _connect_or_start(self, *, resumed: bool) -> tuple[socket.socket, bytes]:
        """A connection that took this window's hello, and what followed the answer."""
        hello = dataclasses.replace(self.hello, resumed=resumed)
        give_up = time.monotonic() + START_S
        while True:
            connected = _connect(self.place, hello)
            if connected is not None:
                return connected
            lock = _try_lock(self.place.lock)
            if lock is not None:
                self._start(lock)
                continue
            if time.monotonic() >= give_up:
                raise TimeoutError(
                    f"no MCP daemon answered on {self.place.socket} within {START_S:.0f} s"
                    f" (see {self.place.log})"
                )
            time.sleep(POLL_S)

    def _start(self, lock: int) -> None:
        """Start the daemon, handing it ``lock``; return once it is ready."""
        import subprocess

        root = str(Path(__file__).resolve().parents[2])
        boot = (
            f"import sys; sys.path.insert(0, {root!r}); "
            "from worker.cli.mcp_daemon import main; sys.exit(main())"
        )
        spec = {
            "args": self.settings,
            "dir": str(self.place.directory),
            "key": self.place.key,
            "lock_fd": lock,
        }
        environ = {k: v for k, v in os.environ.items() if k not in WINDOW_VARIABLES}
        try:
            proc = subprocess.Popen(
                [sys.executable, "-c", boot, json.dumps(spec)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                env=environ,
                pass_fds=(lock,),
                start_new_session=True,
            )
        finally:
            os.close(lock)  # the daemon holds it now
        assert proc.stdout is not None
        with proc.stdout:
            for line in proc.stdout:
                if line == READY:
                    return
                sys.stderr.buffer.write(line)
                sys.stderr.flush()
        raise StartError(proc.wait() or EXIT_FAILED)

    # ---- the relay ----------------------------------------------------------------------
    def _pump_stdin(self) -> None:
        while True:
            try:
                chunk = os.read(0, CHUNK)
            except OSError:
                chunk = b""
            if not chunk:
                self.link.close_input()
                return
            self.handshake.feed(chunk)
            self.link.send(chunk)

    def _pump_socket(self, sock: socket.socket, pending: bytes, skip: int) -> bool:
        """Copy the daemon's bytes to stdout, its first ``skip`` lines withheld, until
        the connection ends; False when stdout is closed."""
        while True:
            while skip and b"\n" in pending:
                pending = pending.split(b"\n", 1)[1]
                skip -= 1
            if not skip and pending:
                if not _write_all(pending):
                    return False
                pending = b""
            try:
                chunk = sock.recv(CHUNK)
            except OSError:
                chunk = b""
            if not chunk:
                sock.close()
                return True
            pending += chunk


def _connect(place: Place, hello: Hello) -> tuple[socket.socket, bytes] | None:
    """A connection that took ``hello``, or None when no daemon answers (none listens,
    or it ended before answering). A daemon that refuses the hello raises ``StartError``."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(HELLO_S)  # a daemon that accepts and never answers is none
    try:
        with address(place.socket) as name:
            sock.connect(name)
        sock.sendall(hello.line())
        got = b""
        while b"\n" not in got and len(got) < 1 << 16:
            chunk = sock.recv(4096)
            if not chunk:
                raise ConnectionResetError
            got += chunk
    except OSError:
        sock.close()
        return None
    sock.settimeout(None)
    line, _, rest = got.partition(b"\n")
    try:
        answer = json.loads(line)
        refusal = None if answer.get("ok") is True else str(answer.get("error"))
    except (ValueError, AttributeError):
        refusal = "its answer to the hello is not JSON"
    if refusal is not None:
        sock.close()
        print(f"sessionq mcp: the MCP daemon refused this window: {refusal}", file=sys.stderr)
        raise StartError(EXIT_FAILED)
    return sock, rest


def _try_lock(path: Path) -> int | None:
    """A descriptor holding ``path``'s exclusive lock, or None while another holds it."""
    fd = open_file(path, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def _write_all(data: bytes) -> bool:
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(1, view) :]
        except OSError:
            return False
    return True


class _Link:
    """The current connection to the daemon, shared by the two pumps: the stdin pump
    sends through it and waits while the main thread connects again."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._sock: socket.socket | None = None
        self.stdin_closed = False

    def install(self, sock: socket.socket) -> None:
        with self._cond:
            self._sock = sock
            if self.stdin_closed:
                _shut(sock)
            self._cond.notify_all()

    def lost(self, sock: socket.socket) -> None:
        with self._cond:
            if self._sock is sock:
                self._sock = None

    def send(self, data: bytes) -> None:
        while True:
            with self._cond:
                while self._sock is None:
                    self._cond.wait()
                sock = self._sock
            try:
                sock.sendall(data)
                return
            except OSError:
                self.lost(sock)  # the main thread connects again; then this is resent

    def close_input(self) -> None:
        with self._cond:
            self.stdin_closed = True
            if self._sock is not None:
                _shut(self._sock)


def _shut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_WR)

