"""The keyring of host public keys: which host key may speak for which workspaces.

A JSON file, reloaded when it changes (checked at most once a second)::

    {"keys": [{"kid": "host-a", "public_key": "-----BEGIN PUBLIC KEY-----\\n...",
               "workspaces": ["/home/dev/", "/srv/app"]}]}

``workspaces`` are cwd prefixes matched on whole path segments (``/srv/app`` covers
``/srv/app`` and ``/srv/app/x``, not ``/srv/apple``); each is an absolute path without
empty, ``.`` or ``..`` segments, and a claimed workspace must be one too
(``/srv/app/../db`` is covered by no prefix); ``"*"`` covers every workspace, including
callers without one. A file that cannot be read or parsed keeps the last good keyring (and is
logged); at start it is an error naming the file and the problem.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import orjson
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import load_pem_public_key

from indexer.errors import INVALID_CONFIG, SessionqError

log = logging.getLogger("sessionq.authn")
RELOAD_CHECK_S: Final = 1.0
ANY_WORKSPACE: Final = "*"


class KeyringError(SessionqError):
    """A key file (the keyring, a host's signing key) cannot be used; ``message`` names
    the file and the problem, ``path`` and ``problem`` hold them apart (the command line
    puts its flag before them)."""

    code = INVALID_CONFIG

    def __init__(self, what: str, path: Path, problem: str) -> None:
        super().__init__(f"{what} {path}: {problem}")
        self.path = path
        self.problem = problem


def file_problem(exc: OSError | ValueError) -> str:
    """What is wrong with a key file, in words: the system's reason for an unreadable
    file, the parser's for a malformed one (JSON: where it broke)."""
    if isinstance(exc, OSError):
        return f"cannot read it: {exc.strerror or exc}"
    if isinstance(exc, orjson.JSONDecodeError):
        return f"not JSON: {exc}"
    return str(exc)


def clean_path(path: str) -> bool:
    """An absolute POSIX path with no empty, ``.`` or ``..`` segment (``/`` itself is)."""
    return path.startswith("/") and (
        path == "/" or all(part not in ("", ".", "..") for part in path[1:].split("/"))
    )


def _prefix(text: str, where: str) -> str:
    """A keyring prefix as matched: ``*``, or a clean absolute path without its trailing
    ``/`` (``/home/dev/`` is ``/home/dev``)."""
    if text == ANY_WORKSPACE:
        return text
    prefix = text.rstrip("/") or "/"
    if not clean_path(prefix):
        raise ValueError(
            f"{where} {text!r} is not an absolute path without empty, '.' or '..' segments"
        )
    return prefix


@dataclass(frozen=True, slots=True)
class HostKey:
    kid: str
    public_key: Ed25519PublicKey
    workspaces: tuple[str, ...]  # "*" or clean absolute paths (``_prefix``)

    def covers(self, workspace: str | None) -> bool:
        """Whether this host may speak for a caller in ``workspace`` (None: no cwd).

        Matched on whole path segments: ``/home/dev`` covers ``/home/dev`` and
        ``/home/dev/x``, not ``/home/devx``; a claim that is not a clean absolute path
        (``/home/dev/../other``, ``/home/dev//x``, ``home/dev``) is covered by nothing
        but ``*``, since its text and the directory it names may differ."""
        if ANY_WORKSPACE in self.workspaces:
            return True
        if workspace is None or not clean_path(workspace):
            return False
        for prefix in self.workspaces:
            if prefix == "/" or workspace == prefix or workspace.startswith(prefix + "/"):
                return True
        return False


def _parse_key(entry: Any, where: str) -> HostKey:
    if not isinstance(entry, dict):
        raise ValueError(f"{where} is not an object")
    kid, pem, workspaces = entry.get("kid"), entry.get("public_key"), entry.get("workspaces")
    if not isinstance(kid, str) or not kid:
        raise ValueError(f"{where}.kid must be a non-empty string")
    if not isinstance(pem, str):
        raise ValueError(f"{where}.public_key must be a PEM string")
    if (
        not isinstance(workspaces, list)
        or not workspaces
        or not all(isinstance(w, str) and w for w in workspaces)
    ):
        raise ValueError(f"{where}.workspaces must be a non-empty list of cwd prefixes")
    try:
        key = load_pem_public_key(pem.encode())
    except ValueError:
        raise ValueError(f"{where}.public_key is not a PEM public key") from None
    if not isinstance(key, Ed25519PublicKey):
        raise ValueError(f"{where}.public_key is not an Ed25519 public key")
    prefixes = tuple(_prefix(w, f"{where}.workspaces[{i}]") for i, w in enumerate(workspaces))
    return HostKey(kid, key, prefixes)


def parse_keyring(raw: bytes) -> dict[str, HostKey]:
    obj = orjson.loads(raw)
    keys = obj.get("keys") if isinstance(obj, dict) else None
    if not isinstance(keys, list):
        raise ValueError('the top level must be {"keys": [...]}')
    out: dict[str, HostKey] = {}
    for i, entry in enumerate(keys):
        key = _parse_key(entry, f"keys[{i}]")
        if key.kid in out:
            raise ValueError(f"keys[{i}].kid {key.kid!r} appears twice")
        out[key.kid] = key
    return out


def keyring_entry(kid: str, public_pem: str, workspaces: Sequence[str]) -> dict[str, Any]:
    """One ``keys`` entry as ``sessionq keys generate`` prints it."""
    return {"kid": kid, "public_key": public_pem, "workspaces": list(workspaces)}


def entry_file(private_key: Path) -> Path:
    """Where ``sessionq keys generate`` puts a key's keyring entry: beside the key."""
    return private_key.with_name(private_key.stem + ".entry.json")


def read_entry(private_key: Path) -> HostKey | None:
    """The keyring entry beside a private key, or None when there is none or it does
    not parse (the entry is only advice to the host; the workers' keyring decides)."""
    try:
        entry = orjson.loads(entry_file(private_key).read_bytes())
        return _parse_key(entry, "entry")
    except (OSError, ValueError):
        return None


class Keyring:
    """Host keys by ``kid``, from a file that is reloaded when it changes."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._signature: tuple[int, int, int] | None = None
        self._checked = 0.0
        self._keys = self._load()

    def _stat(self) -> tuple[int, int, int]:
        st = os.stat(self.path)
        return (st.st_ino, st.st_size, st.st_mtime_ns)

    def _load(self) -> dict[str, HostKey]:
        try:
            signature = self._stat()
            keys = parse_keyring(self.path.read_bytes())
        except (OSError, ValueError) as exc:
            raise KeyringError("keyring", self.path, file_problem(exc)) from exc
        self._signature = signature
        return keys

    def _maybe_reload(self) -> None:
        now = time.monotonic()
        if now - self._checked < RELOAD_CHECK_S:
            return
        self._checked = now
        try:
            changed = self._stat() != self._signature
        except OSError:
            changed = True
        if not changed:
            return
        try:
            self._keys = self._load()
            log.info("keyring %s reloaded: %d keys", self.path, len(self._keys))
        except KeyringError as exc:
            log.error("%s; keeping the previous keyring", exc.message)

    def get(self, kid: str) -> HostKey | None:
        with self._lock:
            self._maybe_reload()
            return self._keys.get(kid)

    def __len__(self) -> int:
        return len(self._keys)
