"""``sessionq keys generate``: a host's Ed25519 key pair and its keyring entry.

``DIR/KID.key`` (private, 0600), ``DIR/KID.pub`` and ``DIR/KID.entry.json`` (the
keyring entry, public): the host client reads the entry beside its key to tell its user
when a workspace is not one the key may speak for (``worker.host.preflight``). A ``DIR``
made here is 0700 (``indexer.store.private``); one that exists keeps its mode."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import orjson

from indexer.store.private import make_dirs, open_file, write_file
from worker.authn.keyring import entry_file, keyring_entry, parse_keyring
from worker.authn.tokens import generate_key_pair
from worker.cli.exits import EXIT_OK, fail


def _write_private(path: Path, pem: str) -> None:
    """Owner-only from the first byte (no window where others may read the key)."""
    fd = open_file(path, os.O_WRONLY | os.O_EXCL)
    with os.fdopen(fd, "w") as out:
        out.write(pem)


def cmd_keys_generate(args: argparse.Namespace) -> int:
    out: Path = args.out
    make_dirs(out)
    private_path, public_path = out / f"{args.kid}.key", out / f"{args.kid}.pub"
    entry_path = entry_file(private_path)
    if private_path.exists() or public_path.exists() or entry_path.exists():
        fail(args.command, f"{private_path}, .pub or .entry.json exists already; not overwritten")
    private, public = generate_key_pair()
    entry = keyring_entry(args.kid, public, args.workspace)
    try:
        parse_keyring(orjson.dumps({"keys": [entry]}))
    except ValueError as exc:
        fail(args.command, f"--workspace: {exc}".replace("keys[0].workspaces", "workspace"))
    _write_private(private_path, private)
    write_file(public_path, public.encode(), public=True)
    write_file(entry_path, orjson.dumps(entry, option=orjson.OPT_INDENT_2) + b"\n", public=True)
    if args.keyring is not None:
        keyring: Path = args.keyring
        try:
            current = orjson.loads(keyring.read_bytes()) if keyring.exists() else {"keys": []}
            keys = current["keys"] if isinstance(current, dict) else None
            if not isinstance(keys, list):
                raise ValueError('the top level must be {"keys": [...]}')
            updated = {"keys": [*keys, entry]}
            parse_keyring(orjson.dumps(updated))  # the result must load
        except (OSError, ValueError, KeyError) as exc:
            fail(args.command, f"keyring {keyring}: {exc}")
        write_file(keyring, orjson.dumps(updated, option=orjson.OPT_INDENT_2) + b"\n", public=True)
        print(f"added {args.kid!r} to {keyring}", file=sys.stderr)
    print(f"private key: {private_path} (keep it on the host; mode 0600)", file=sys.stderr)
    print(f"public key:  {public_path}", file=sys.stderr)
    print(f"its entry:   {entry_path}", file=sys.stderr)
    sys.stdout.write(orjson.dumps(entry, option=orjson.OPT_INDENT_2).decode() + "\n")
    return EXIT_OK
