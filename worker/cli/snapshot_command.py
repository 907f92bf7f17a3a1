"""``sessionq snapshot create`` and ``sessionq snapshot restore``: a data directory to
and from a directory or an S3-compatible bucket (``indexer.snapshot``).

S3 endpoint, region and keys come from ``SESSIONQ_S3_*`` or the standard ``AWS_*``
variables, never from argv. Failures are one line on stderr and exit 1; a bad location
or flag exits 2.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from indexer.settings import SnapshotCreateSettings, SnapshotRestoreSettings, env_name
from indexer.snapshot.errors import SnapshotError
from indexer.snapshot.stores import UnsupportedLocationError
from worker.cli.options import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    positive_int,
    setting,
    settings_from,
)


def _setting_as(
    parser: argparse.ArgumentParser, flags: list[str], dest: str, **kwargs: Any
) -> None:
    """A setting under a short flag and its setting's own (``--to`` = ``--snapshot-to``)."""
    kwargs["help"] = f"{kwargs.get('help', '')} ({env_name(dest)})".strip()
    parser.add_argument(*flags, dest=dest, default=argparse.SUPPRESS, **kwargs)


def _error(command: str, exc: SnapshotError) -> int:
    print(f"sessionq snapshot {command}: {exc.message}", file=sys.stderr)
    return EXIT_USAGE if isinstance(exc, UnsupportedLocationError) else EXIT_FAILED


def cmd_snapshot_create(args: argparse.Namespace) -> int:
    from indexer.snapshot.create import CLI_WAIT_S, create_snapshot
    from indexer.snapshot.stores import open_location

    settings = settings_from(SnapshotCreateSettings, args)
    try:
        store = open_location(settings.snapshot_to, settings.s3)
        created = create_snapshot(
            settings.data, store, keep=settings.snapshot_keep, wait_s=CLI_WAIT_S
        )
    except SnapshotError as exc:
        return _error("create", exc)
    m = created.manifest
    offsets = ", ".join(f"{o.topic}[{o.partition}]@{o.next_offset}" for o in m.offsets) or "none"
    print(
        f"snapshot {created.where}: {len(m.files)} files, {m.total_bytes():,} bytes, offsets"
        f" {offsets}; capture {created.capture_s:.1f}s, upload {created.upload_s:.1f}s"
    )
    for name in created.pruned:
        print(f"pruned {name}")
    return EXIT_OK


def cmd_snapshot_restore(args: argparse.Namespace) -> int:
    from indexer.snapshot.restore import restore_snapshot
    from indexer.snapshot.stores import open_location

    settings = settings_from(SnapshotRestoreSettings, args)
    try:
        store = open_location(settings.snapshot_from, settings.s3)
        outcome = restore_snapshot(store, settings.data, force=args.force, if_empty=args.if_empty)
    except SnapshotError as exc:
        return _error("restore", exc)
    if outcome.restored and outcome.manifest is not None:
        offsets = ", ".join(
            f"{o.topic}[{o.partition}]@{o.next_offset}" for o in outcome.manifest.offsets
        )
        print(f"{outcome.message}; the indexer resumes from {offsets or 'the beginning'}")
    else:
        print(f"sessionq snapshot restore: {outcome.message}", file=sys.stderr)
    return EXIT_OK


def add_snapshot_command(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser("snapshot", help="consistent copies of a data dir (directory or S3)")
    ssub = p.add_subparsers(dest="snapshot_command", required=True)

    c = ssub.add_parser("create", help="snapshot a data dir, also while its indexer runs")
    setting(c, "--data", type=Path, help="data directory")
    _setting_as(
        c, ["--to", "--snapshot-to"], "snapshot_to", help="a directory or s3://bucket/prefix"
    )
    _setting_as(
        c,
        ["--keep", "--snapshot-keep"],
        "snapshot_keep",
        type=positive_int,
        help="then keep only the newest N complete snapshots there",
    )
    c.set_defaults(handler=cmd_snapshot_create)

    r = ssub.add_parser("restore", help="restore the newest snapshot into a data dir")
    setting(r, "--data", type=Path, help="data directory")
    _setting_as(
        r,
        ["--from", "--snapshot-from"],
        "snapshot_from",
        help="a snapshot, or a directory / s3:// prefix holding snapshots (newest is taken)",
    )
    r.add_argument("--force", action="store_true", help="replace a data dir that holds data")
    r.add_argument(
        "--if-empty",
        action="store_true",
        help="do nothing (exit 0) when the data dir holds data or no snapshot exists yet",
    )
    r.set_defaults(handler=cmd_snapshot_restore)


def add_indexer_snapshot_flags(p: argparse.ArgumentParser) -> None:
    """``sessionq indexer``'s periodic snapshots."""
    setting(
        p,
        "--snapshot-every",
        metavar="DURATION",
        help="publish a snapshot this often (seconds, or 90s / 15m / 1h / 2d)",
    )
    setting(p, "--snapshot-to", help="where: a directory or s3://bucket/prefix")
    setting(p, "--snapshot-keep", type=positive_int, help="complete snapshots kept there")
