"""Looking for a session's bytes in every file of a data dir (the erasure tests).

A scan can only prove erasure if it would find the bytes were they there, so every
helper here comes with its control: the tests run the same scan for a session that is
still stored and require it to be found.

* ``marker()`` makes text that survives Tantivy's LZ4 doc store as a literal: upper-case
  letters from a small alphabet that log text hardly uses, no four-letter group twice
  (LZ4 would replace a repeat by a back-reference and split the text), and a first and a
  last letter no other marker of the test has (LZ4 extends a match as far as the bytes
  agree, so a marker that began like one stored before it, behind the same bytes, would
  lose its first letters to that match: ``tests/indexer/test_erasure_scan.py``).
* ``cell_values`` reads every stored value of every SQLite table, so the exact stored
  bytes of a session's rows (raw JSON, or compressed blocks) are known before a delete;
  ``unique_fragments`` cuts them into short pieces found in no other value (a long value
  spans overflow pages, so it is not contiguous in the file, but each piece mostly is).
"""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Iterable
from pathlib import Path

from indexer.store.layout import sqlite_path

MARKER_ALPHABET = "QXZJKVWY"
MIN_VALUE_BYTES = 32


def marker(rng: random.Random, length: int = 32, avoid: Iterable[str] = ()) -> str:
    """Random text no four-letter group of which repeats, in itself or in ``avoid``, and
    whose first and last letters differ from those of every marker in ``avoid`` (so at
    most ``len(MARKER_ALPHABET)`` markers can be told apart)."""
    others = [m for m in avoid if m]
    taken = {m[i : i + 4] for m in others for i in range(len(m) - 3)}
    firsts = {m[0] for m in others}
    lasts = {m[-1] for m in others}
    if len(firsts) >= len(MARKER_ALPHABET) or len(lasts) >= len(MARKER_ALPHABET):
        raise ValueError(f"no marker can differ from {len(others)} others")
    while True:
        text = "".join(rng.choice(MARKER_ALPHABET) for _ in range(length))
        grams = [text[i : i + 4] for i in range(length - 3)]
        if (
            text[0] not in firsts
            and text[-1] not in lasts
            and len(set(grams)) == len(grams)
            and not taken.intersection(grams)
        ):
            return text


def data_files(data_dir: Path) -> list[Path]:
    return sorted(p for p in data_dir.rglob("*") if p.is_file())


def scan(data_dir: Path, needles: Iterable[bytes]) -> dict[bytes, list[str]]:
    """Each needle -> the data dir's files (relative paths) that contain it."""
    wanted = list(needles)
    found: dict[bytes, list[str]] = {n: [] for n in wanted}
    for path in data_files(data_dir):
        blob = path.read_bytes()
        for needle in wanted:
            if needle in blob:
                found[needle].append(str(path.relative_to(data_dir)))
    return found


def cell_values(data_dir: Path) -> set[bytes]:
    """Every TEXT/BLOB value of at least ``MIN_VALUE_BYTES`` in every table of the store
    (read through a connection closed at once, so it holds no snapshot)."""
    conn = sqlite3.connect(f"file:{sqlite_path(data_dir)}?mode=ro", uri=True)
    try:
        tables = [
            r[0]
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
            )
        ]
        out: set[bytes] = set()
        for table in tables:
            for row in conn.execute(f'SELECT * FROM "{table}"'):
                for value in row:
                    raw = value if not isinstance(value, str) else value.encode("utf-8")
                    if isinstance(raw, bytes) and len(raw) >= MIN_VALUE_BYTES:
                        out.add(raw)
        return out
    finally:
        conn.close()


def unique_fragments(
    values: Iterable[bytes],
    universe: Iterable[bytes],
    *,
    length: int = MIN_VALUE_BYTES,
    step: int = 8,
    per_value: int = 3,
) -> dict[bytes, list[bytes]]:
    """Each value -> up to ``per_value`` of its ``length``-byte pieces that occur nowhere
    in ``universe`` (every stored value) but in the value itself: finding one in a file
    can only mean the value is there."""
    items = list(dict.fromkeys([*universe, *values]))
    offsets: dict[bytes, int] = {}
    position = 0
    for item in items:
        offsets[item] = position
        position += len(item) + 1
    joined = b"\x00".join(items)
    out: dict[bytes, list[bytes]] = {}
    for value in values:
        start, end = offsets[value], offsets[value] + len(value)
        keep: list[bytes] = []
        for at in range(0, max(1, len(value) - length + 1), step):
            piece = value[at : at + length]
            first = joined.find(piece)  # the first occurrence must be this value's ...
            if start <= first < end and joined.find(piece, end) == -1:  # ... and the last
                keep.append(piece)
                if len(keep) == per_value:
                    break
        out[value] = keep
    return out
