"""Build the frequent-token list the index ships (``indexer/store/tantivy/frequent_tokens.txt``).

``python -m worker.devtools.frequent_tokens [PATH...] [--top N] [--out FILE]`` reads real
session logs (default: the corpus in ``shared/corpus/dsh``), tokenizes every event's search
text with the index's own analyzer (``doc_tokens``) and writes the ``N`` tokens with the
most occurrences, most frequent first, one a line. Single-character tokens are left out:
they are frequent by rule (``indexer.store.tantivy.analyzer.frequent``).

Why: the ``pairs`` field only holds pairs of two frequent tokens. A phrase of common
words is what a positional phrase query is slow on (long position lists to intersect);
a phrase with one rare token is fast without any pair, since the rare token's short
posting list drives the intersection. So the list bounds the field's size while
keeping the pair shortcut exactly where it pays.

Changing the list changes which pairs documents carry: the index format id
(``indexer.store.tantivy.schema.INDEX_FORMAT``) includes the list's digest, so the
writer rebuilds an existing index from the stored rows on its next open.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from indexer.logs.reader import LogRejectedError, read_log
from indexer.logs.roots import discover
from indexer.store.tantivy.analyzer import MAX_PAIR_TOKEN_CHARS, doc_tokens, sanitize_text
from indexer.surface.text import extract_text

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_CORPUS = ROOT.parent / "shared" / "corpus" / "dsh"
DEFAULT_OUT = ROOT / "indexer" / "store" / "tantivy" / "frequent_tokens.txt"
DEFAULT_TOP = 300


def count_tokens(paths: Sequence[Path]) -> tuple[Counter[str], int]:
    """Occurrences of each token over every indexed event text, and the logs read."""
    counts: Counter[str] = Counter()
    logs = 0
    for path in discover(list(paths)):
        try:
            log = read_log(path)
        except (LogRejectedError, OSError):
            continue
        logs += 1
        for event in log.events:
            text = extract_text(event.type, event.data)
            if text:
                counts.update(doc_tokens(sanitize_text(text)))
    return counts, logs


def top_tokens(counts: Counter[str], n: int) -> list[str]:
    """The ``n`` most frequent multi-character tokens that can be half of a pair term
    (ties by token, so the list is reproducible)."""
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    eligible = [
        t
        for t, _ in ranked
        if len(t) > 1 and len(t) <= MAX_PAIR_TOKEN_CHARS and not any(c.isspace() for c in t)
    ]
    return eligible[:n]


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="*", type=Path, default=[DEFAULT_CORPUS])
    ap.add_argument("--top", type=int, default=DEFAULT_TOP, help="tokens to keep")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = ap.parse_args(argv)
    counts, logs = count_tokens(args.paths)
    tokens = top_tokens(counts, args.top)
    args.out.write_text("".join(t + "\n" for t in tokens), encoding="utf-8")
    total = sum(counts.values())
    covered = sum(counts[t] for t in tokens) + sum(c for t, c in counts.items() if len(t) == 1)
    print(
        f"wrote {args.out}: {len(tokens)} tokens from {logs} logs; with single characters "
        f"they are {covered / max(1, total):.1%} of {total:,} token occurrences",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
