"""Recall and false positives of the secret rules, beside another checkout's rule set, in
the same run and on the same inputs.

Inputs (made once, in this process, from this tree's test modules):

1. the labelled set (``tests.redaction.labelled``): ``--per-kind`` made-up secrets of
   every kind in the contexts agent logs carry them in, and the attacker's planted shapes;
2. gitleaks' own rule tests (``tests.redaction.gitleaks``, fetched from its Go module):
   true positives by kind (``tests.redaction.scoring.SCOPE``, the rest "other") and its
   false-positive samples;
3. every real log of ``tests.redaction.test_false_positives.REAL_LOGS``: values redacted
   (each a false positive unless accepted there), and its near misses.

Each side (this tree, and ``--baseline-src``: a checkout of another commit, e.g.
``git worktree add /tmp/base970 970ce9a``) runs in a subprocess with its checkout first on
``sys.path``, reads the texts on stdin and answers the redacted spans of each; the scoring
here is the same for both.

Run: ``.venv/bin/python -m bench.bench_redaction --baseline-src /tmp/base970``
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.mix import ROOT, checkout
from tests.redaction.gitleaks import samples
from tests.redaction.labelled import KINDS, Labelled, labelled, planted
from tests.redaction.scoring import SCOPE, Score, Tally
from tests.redaction.test_false_positives import NEAR_MISSES, REAL_LOGS, SUFFIXES
from tests.redaction.test_recall import survives

SIDE = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
from collections import Counter
from indexer.redact.policy import detector
from indexer.redact.values import redact_value
d = detector()
tasks = json.load(sys.stdin)
started = time.process_time()
out = []
for kind, text in tasks:
    if kind == "text":
        out.append([[f.start, f.end] for f in d.find(text)])
        continue
    try:
        obj = json.loads(text) if kind == "json" else text
    except ValueError:
        out.append(0)
        continue
    counts = Counter()
    redact_value(d, obj, counts)
    out.append(sum(counts.values()))
json.dump({"answers": out, "cpu": time.process_time() - started}, sys.stdout)
"""


def run_side(src: Path, tasks: list[tuple[str, str]]) -> tuple[list[Any], float]:
    """Each task's answer from checkout ``src``: spans of a ``text``, the number of values
    redacted in a ``json`` document or a ``doc`` text (through the events walk); and the
    CPU seconds the side spent on them (its imports and rule compilation left out)."""
    done = subprocess.run(
        [sys.executable, "-c", SIDE, str(src)],
        input=json.dumps(tasks),
        capture_output=True,
        text=True,
        check=True,
    )
    reply: dict[str, Any] = json.loads(done.stdout)
    return reply["answers"], float(reply["cpu"])


def _redacted(text: str, spans: list[list[int]]) -> str:
    out, at = [], 0
    for start, end in sorted(spans):
        out.append(text[at:start] + "[REDACTED]")
        at = max(at, end)
    return "".join(out) + text[at:]


def real_log_tasks() -> list[tuple[str, str]]:
    tasks: list[tuple[str, str]] = []
    for root in REAL_LOGS:
        for path in sorted(p for p in root.rglob("*") if p.suffix in SUFFIXES):
            text = path.read_text(errors="replace")
            if path.suffix == ".jsonl":
                tasks += [("json", line) for line in text.splitlines()]
            elif path.suffix == ".json":
                tasks.append(("json", text))
            else:
                tasks.append(("doc", text))
    return tasks


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline-src", type=checkout, default=None)
    ap.add_argument("--per-kind", type=int, default=200)
    args = ap.parse_args()

    items: list[Labelled] = labelled(random.Random(20230923), args.per_kind)
    planted_items = planted(random.Random(34))
    harvest = samples()
    real = real_log_tasks()
    texts = [i.text for i in items + planted_items] + [s.text for s in harvest.samples]
    tasks = [("text", t) for t in texts + NEAR_MISSES] + real

    sides = {"this tree": ROOT}
    if args.baseline_src is not None:
        sides[args.baseline_src.name] = args.baseline_src
    rows: dict[str, dict[str, str]] = defaultdict(dict)
    for name, src in sides.items():
        answers, seconds = run_side(src, tasks)
        spans = answers[: len(texts)]
        near = answers[len(texts) : len(texts) + len(NEAR_MISSES)]
        real_counts = answers[len(texts) + len(NEAR_MISSES) :]
        by_kind: dict[str, Tally] = defaultdict(Tally)
        for n, (item, found) in enumerate(zip(items + planted_items, spans, strict=False)):
            keys = ["planted"] if n >= len(items) else ["labelled", f"labelled {item.kind}"]
            for key in keys:
                by_kind[key].total += 1
                by_kind[key].hit += not survives(item.secret, _redacted(item.text, found))
        score = Score()
        tps = spans[len(items) + len(planted_items) :]
        for sample, found in zip(harvest.samples, tps, strict=True):
            score.add(sample, [(s, e) for s, e in found])
        row = rows
        row["labelled set"][name] = str(by_kind["labelled"])
        row["planted shapes"][name] = str(by_kind["planted"])
        row["gitleaks tps in scope"][name] = str(score.in_scope())
        for kind in SCOPE:
            row[f"  {kind}"][name] = str(score.recall[kind])
        row["gitleaks tps other vendors"][name] = str(score.recall["other"])
        row["gitleaks fps redacted"][name] = str(score.fp_total())
        row["real logs: values redacted"][name] = str(sum(real_counts))
        row["near misses redacted"][name] = f"{sum(1 for s in near if s)}/{len(near)}"
        row["CPU seconds, all of the above"][name] = f"{seconds:.2f}"
        for kind in KINDS:
            row[f"  labelled {kind}"][name] = str(by_kind[f"labelled {kind}"])

    print(
        f"gitleaks {harvest.rules} rules: {harvest.taken} sample expressions of "
        f"{harvest.taken + harvest.skipped} taken, {len(harvest.samples)} texts; "
        f"labelled {args.per_kind} per kind; {len(real)} real-log documents"
    )
    width = max(len(k) for k in rows) + 2
    print("".ljust(width) + "".join(n.ljust(24) for n in sides))
    for label, cells in rows.items():
        print(label.ljust(width) + "".join(cells.get(n, "").ljust(24) for n in sides))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
