"""Checks at the door of the long-running commands: what a newcomer gets wrong is said in
one line naming the cause and the fix, with exit status 2, before any work starts.

* ``--sessions`` paths must exist (a typo must not start a server that never answers);
* ``--data`` must be a directory this process can create or write, and a non-empty
  directory must be a sessionq data dir (``--data ~`` must not fill a home directory);
  a role that needs a broker first checks it without creating it, and creates it only
  once the broker answered;
* a key file (``--keyring``, ``--signing-key``) must be readable and what the flag
  wants (a keyring's JSON, an Ed25519 private key in PEM);
* a listen address must be free: the port is bound here, before the first ingest (or
  the first connection to Kafka), and the bound socket is what the server then serves
  on — ``serve``'s ``--listen`` and every role's ``--metrics-listen`` alike.
"""

from __future__ import annotations

import errno
import os
import socket
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Protocol

from indexer.store.layout import MCP_DIR_NAME, SQLITE_NAME, WATCH_DIR_NAME, WRITER_LOCK_NAME
from indexer.store.private import make_dirs
from worker.cli.exits import fail

if TYPE_CHECKING:
    from worker.authn.tokens import CallerSigner

_OWN_FILES = frozenset({SQLITE_NAME, WRITER_LOCK_NAME, WATCH_DIR_NAME, MCP_DIR_NAME, "tantivy"})


def session_roots(command: str, paths: Sequence[Path], *, flag: str = "--sessions") -> list[Path]:
    """The session log paths (``--sessions``, or positional), absolute; a missing one
    exits 2."""
    out: list[Path] = []
    for given in paths:
        path = Path(os.path.expanduser(given))
        if not path.exists():
            shown = f"--sessions {given}" if flag == "--sessions" else str(given)
            fail(
                command,
                f"{shown}: no such file or directory (give a dsh root, a Claude Code, Codex"
                " or other agent's log tree, or log files)",
            )
        out.append(path.resolve())
    return out


def usable_data_dir(command: str, path: Path) -> Path:
    """``--data`` as this process could use it, creating nothing: a directory it may
    write, or a missing one whose nearest existing parent it may write; a non-empty
    directory must be a sessionq data dir. Exits 2 naming why not."""
    path = Path(os.path.expanduser(path))
    if path.exists() and not path.is_dir():
        fail(command, f"--data {path} is a file, not a directory: give a directory for the data")
    if not path.exists():
        parent = next((p for p in path.absolute().parents if p.exists()), Path("/"))
        if not parent.is_dir():
            fail(command, f"--data {path}: cannot create it ({parent} is not a directory)")
        if not os.access(parent, os.W_OK | os.X_OK):
            fail(command, f"--data {path}: cannot create it ({parent} is not writable)")
        return path
    if not os.access(path, os.W_OK | os.X_OK):
        fail(command, f"--data {path}: not writable by this user (fix its permissions)")
    entries = set(os.listdir(path))
    if entries and not entries & _OWN_FILES:
        fail(
            command,
            f"--data {path} is a non-empty directory that is not a sessionq data directory:"
            " give an empty or new directory (e.g. ~/.sessionq/data)",
        )
    return path


def data_dir(command: str, path: Path) -> Path:
    """A data dir this process may write (``usable_data_dir``), created (owner-only)
    when missing; exits 2 naming why not."""
    path = usable_data_dir(command, path)
    try:
        make_dirs(path)
    except OSError as exc:
        fail(command, f"--data {path}: cannot create it ({exc.strerror or exc})")
    return path


def _bind(family: int, kind: int, proto: int, address: Any) -> socket.socket | OSError:
    """A listening socket on ``address``, or why it cannot be one."""
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        return exc
    sock.setblocking(False)
    return sock


def _resolve(command: str, host: str, port: int, where: str) -> tuple[int, int, int, Any]:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        fail(command, f"{where}: cannot resolve {host!r} ({exc.strerror})")
    family, kind, proto, _, address = infos[0]
    return family, kind, proto, address


def listening_socket(
    command: str, host: str, port: int, *, flag: str = "--listen", env: str = "SESSIONQ_LISTEN"
) -> socket.socket:
    """Bind ``host:port`` now (``:0`` picks a free port); a busy port exits 2, in one line
    naming the address, ``flag`` and its environment variable ``env``."""
    where = f"{flag} {host}:{port}"
    bound = _bind(*_resolve(command, host, port, where))
    if isinstance(bound, socket.socket):
        return bound
    if bound.errno == errno.EADDRINUSE:
        fail(
            command,
            f"{where}: the address is already in use (another server on that port? pick"
            f" another with {flag} HOST:PORT or {env}, or port 0 for a free one)",
        )
    fail(command, f"{where}: cannot listen there ({bound.strerror or bound})")


# Where a role whose default metrics port is taken serves instead: the first free port
# above the three roles' defaults (indexer 9464, worker 9465, node 9466), so a second
# process of one role never takes another role's default.
METRICS_FALLBACK_PORTS: Final = range(9467, 9500)


class OpsSettings(Protocol):
    """A role with ops endpoints (``metrics_listen``) whose settings say what was given."""

    @property
    def metrics_listen(self) -> str: ...

    @property
    def model_fields_set(self) -> set[str]: ...


def metrics_socket(command: str, settings: OpsSettings) -> socket.socket | None:
    """A long-running role's ``--metrics-listen`` socket (``/metrics``, ``/healthz``,
    ``/readyz``), bound now; None when the setting is empty (no endpoints).

    An address given (flag or variable) is taken or the role exits 2. The role's default
    taken (another process of the role on this host) is not an error: the first free
    port of ``METRICS_FALLBACK_PORTS`` on the same host is taken instead, said in one
    line; the ready line (``metrics on HOST:PORT``) names the port either way."""
    from worker.transports.http.ops import parse_listen

    listen = settings.metrics_listen
    if not listen:
        return None
    flag, env = "--metrics-listen", "SESSIONQ_METRICS_LISTEN"
    try:
        host, port = parse_listen(listen)
    except ValueError as exc:
        fail(command, f"{flag} / {env}: {exc}")
    if "metrics_listen" in settings.model_fields_set:
        return listening_socket(command, host, port, flag=flag, env=env)
    where = f"{flag} {host}:{port}"
    family, kind, proto, address = _resolve(command, host, port, where)
    bound = _bind(family, kind, proto, address)
    if isinstance(bound, socket.socket):
        return bound
    if bound.errno != errno.EADDRINUSE:
        fail(command, f"{where}: cannot listen there ({bound.strerror or bound})")
    for other in METRICS_FALLBACK_PORTS:
        moved = _bind(family, kind, proto, (address[0], other, *address[2:]))
        if isinstance(moved, socket.socket):
            shown = f"[{host}]" if ":" in host else host
            print(
                f"sessionq {command}: the default metrics address {listen} is taken (another"
                f" {command} on this host?): serving on {shown}:{other} instead; pin one with"
                f" {flag} HOST:PORT or {env}",
                file=sys.stderr,
                flush=True,
            )
            return moved
    last = METRICS_FALLBACK_PORTS[-1]
    fail(
        command,
        f"{where}: the address is already in use, and so is every port"
        f" {METRICS_FALLBACK_PORTS[0]}-{last}: give one with {flag} HOST:PORT or {env}",
    )


def keyring(command: str, path: Path | None) -> None:
    """The ``--keyring`` file reads and parses (the role loads it again when it starts,
    and reloads it when it changes); exits 2 naming the flag, the file and the problem."""
    from worker.authn.keyring import Keyring, KeyringError

    if path is None:
        return
    try:
        Keyring(path)
    except KeyringError as exc:
        fail(
            command,
            f"--keyring {exc.path}: {exc.problem}; give the keyring JSON file"
            " `sessionq keys generate --keyring F` writes",
        )


def signing_key(command: str, key_id: str | None, path: Path | None) -> CallerSigner | None:
    """The host's signer from ``--signing-key`` and ``--key-id`` (None without a key);
    exits 2 naming the flag, the file and the problem."""
    from worker.authn.keyring import KeyringError
    from worker.authn.tokens import CallerSigner

    if path is None:
        return None
    if key_id is None:
        fail(command, "--signing-key needs --key-id (SESSIONQ_KEY_ID)")
    try:
        return CallerSigner.from_file(key_id, path)
    except KeyringError as exc:
        fail(
            command,
            f"--signing-key {exc.path}: {exc.problem}; give the KID.key file"
            " `sessionq keys generate` writes",
        )
