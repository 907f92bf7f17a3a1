"""Train the zstd dictionary the store ships (``indexer/store/zstd.dict``).

``python -m worker.devtools.zstd_dictionary [PATH...] [--size BYTES] [--out FILE]``
reads real session logs (default: the corpus in ``shared/corpus/dsh``), cuts each into the
store's blocks with the store's own encoder (``indexer.store.blocks.format``), trains a
dictionary on those block payloads and prints how well it compresses logs it was not
trained on (every fifth log is held out). Data dirs keep a copy of the dictionary their
blocks use, so shipping a new one never makes an existing dir unreadable; new dirs use
the new one.

The dictionary is trained on the real corpus only; the benchmark corpora are derived
from the same logs, so their ratio is better than an unrelated installation would see
(the held-out figure is the fairer one).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import zstandard

from indexer.logs.reader import LogRejectedError, read_log
from indexer.logs.roots import discover
from indexer.model.event import SURFACE_ELIGIBLE
from indexer.store.blocks.format import LEVEL, StoredEvent, encode, split_blocks
from indexer.surface.text import extract_text

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_CORPUS = ROOT.parent / "shared" / "corpus" / "dsh"
DEFAULT_OUT = ROOT / "indexer" / "store" / "zstd.dict"
DEFAULT_SIZE = 32 * 1024
HOLD_OUT_EVERY = 5


def block_payloads(path: Path) -> list[bytes]:
    """The uncompressed block payloads the store writes for one log (none if invalid)."""
    try:
        log = read_log(path)
    except (LogRejectedError, OSError):
        return []
    events = [
        StoredEvent(
            e.seq,
            e.type,
            e.time,
            "current" if e.type in SURFACE_ELIGIBLE else "log-only",
            bool(extract_text(e.type, e.data)),
            e.raw,
        )
        for e in log.events
    ]
    return [encode(block) for block in split_blocks(events)]


def train(paths: Sequence[Path], size: int) -> tuple[bytes, list[bytes]]:
    """(dictionary, held-out payloads)."""
    files = discover(list(paths))
    samples: list[bytes] = []
    held_out: list[bytes] = []
    for i, path in enumerate(files):
        (held_out if i % HOLD_OUT_EVERY == HOLD_OUT_EVERY - 1 else samples).extend(
            block_payloads(path)
        )
    dictionary = zstandard.train_dictionary(size, cast(Any, samples), level=LEVEL)
    return dictionary.as_bytes(), held_out


def ratio(payloads: Sequence[bytes], dictionary: bytes | None) -> float:
    """Uncompressed / compressed bytes, one frame per payload (as the store writes)."""
    if dictionary is None:
        ctx = zstandard.ZstdCompressor(level=LEVEL)
    else:
        ctx = zstandard.ZstdCompressor(
            level=LEVEL, dict_data=zstandard.ZstdCompressionDict(dictionary)
        )
    raw = sum(len(p) for p in payloads)
    packed = sum(len(ctx.compress(p)) for p in payloads)
    return raw / max(1, packed)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="*", type=Path, default=[DEFAULT_CORPUS])
    ap.add_argument("--size", type=int, default=DEFAULT_SIZE, help="dictionary bytes")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = ap.parse_args(argv)
    dictionary, held_out = train(args.paths, args.size)
    args.out.write_bytes(dictionary)
    did = zstandard.ZstdCompressionDict(dictionary).dict_id()
    print(
        f"wrote {args.out} ({len(dictionary):,} bytes, dictionary id {did}); held-out "
        f"blocks ({len(held_out)}): x{ratio(held_out, None):.2f} without, "
        f"x{ratio(held_out, dictionary):.2f} with the dictionary",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
