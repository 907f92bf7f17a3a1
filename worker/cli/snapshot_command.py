"""``sessionq snapshot create`` and ``sessionq snapshot restore``: a data directory to
and from a directory or an S3-compatible bucket (``indexer.snapshot``).

S3 endpoint, region and keys come from ``SESSIONQ_S3_*`` or the standard ``AWS_*``
variables, never from argv. Failures are one line on stderr and exit 1; a bad location
or flag exits 2.
"""

from __future__ import annotations

import argparse
import sys

from indexer.settings import SnapshotCreateSettings, SnapshotRestoreSettings
from indexer.snapshot.errors import SnapshotError
from indexer.snapshot.stores import UnsupportedLocationError
from worker.cli.exits import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from worker.cli.options import settings_from


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
