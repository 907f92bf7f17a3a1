"""Retrieval quality of ``session_search`` per search mode, this tree beside a baseline
checkout, in one run (bench/README.md, "Search that finds what the agent means").

1. the corpus: real public Aider sessions as Claude Code logs (``../shared/relevance/
   claude``: 23 workspaces, one per repository, and one short caller session in each),
   ingested once per checkout; and the same sessions *pooled* into one workspace (every
   ``cwd`` rewritten to ``/home/dev/pooled``), where ranking among 200 sessions, not
   only matching among a dozen, decides;
2. the queries: ``bench/relevance/queries.json``, written as an agent working later in
   each project would type them, before any search, each labelled with the sessions
   holding the work (``bench/relevance/README.md``); a holdout kept apart;
3. each query is a ``session_search`` by the workspace's caller session, through the
   tools' pipeline in a child process with that checkout's code first on ``sys.path``
   (``--baseline-src``: 970ce9a, phrase mode only — it has no other), every mode of this
   tree;
4. printed per corpus, mode and query kind: hit@1, hit@5, MRR@10 and the share of
   queries with no result at all; ``bench/out/relevance.json`` holds every ranking.

Usage: ``python bench/bench_relevance.py [--baseline-src DIR] [--queries FILE]
[--holdout-only]``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Final

ROOT: Final = Path(__file__).resolve().parents[1]
if __package__ in (None, ""):
    sys.path.insert(0, str(ROOT))

from bench.mix import checkout  # noqa: E402

OUT: Final = ROOT / "bench" / "out"
CORPUS: Final = ROOT.parent / "shared" / "relevance" / "claude"
QUERIES: Final = ROOT / "bench" / "relevance" / "queries.json"
POOLED: Final = "/home/dev/pooled"
KINDS: Final = ("keywords", "identifier", "error", "natural")
_HIT: Final = re.compile(r"^\d+\. Session (\S+) ", re.MULTILINE)


def _pooled(out: Path) -> Path:
    """The corpus with every session's ``cwd`` rewritten to ``POOLED`` (one workspace)."""
    pooled = out / "pooled-projects"
    if pooled.exists():
        return pooled
    tmp = out / "pooled-projects.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    for log in sorted((CORPUS / "projects").rglob("*.jsonl")):
        target = tmp / "-home-dev-pooled" / log.name
        target.parent.mkdir(parents=True, exist_ok=True)
        lines = []
        for line in log.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            if "cwd" in record:
                record["cwd"] = POOLED
            lines.append(json.dumps(record))
        target.write_text("\n".join(lines) + "\n", encoding="utf-8")
    tmp.replace(pooled)
    return pooled


def _callers() -> dict[str, str]:
    """Each workspace's caller session (``caller: true`` in the corpus' manifest), by cwd."""
    wanted = {
        m["id"] for m in json.loads((CORPUS / "manifest.json").read_text()) if m.get("caller")
    }
    out: dict[str, str] = {}
    for log in sorted((CORPUS / "projects").rglob("*.jsonl")):
        if log.stem in wanted:
            first = json.loads(log.read_text(encoding="utf-8").splitlines()[0])
            out[first["cwd"]] = log.stem
    return out


SIDE = r"""
import asyncio, json, sys
code, data, logs, modes = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4].split(",")
sys.path.insert(0, code)
from pathlib import Path
from worker.cli.main import main
from indexer.query.service import StoreQueryService
import importlib
# Where the checkout keeps the pipeline (worker/calls/ since the transports moved); asked
# of the checkout itself: an editable install of this tree would answer a missing module.
calls = "worker.calls." if Path(code, "worker", "calls").is_dir() else "worker."
ToolLimits = importlib.import_module(calls + "limits").ToolLimits
Pipeline = importlib.import_module(calls + "pipeline").Pipeline
from worker.tools.access import Caller
if not Path(data).exists():
    import contextlib, io
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["ingest", logs, "--data", data]) == 0
calls = json.loads(sys.stdin.read())
service = StoreQueryService(Path(data))
out = {}
async def run():
    for mode in modes:
        moded = "search_mode" in ToolLimits.model_fields  # a checkout before the modes: phrase
        limits = ToolLimits(search_mode=mode) if moded else ToolLimits()
        pipeline = Pipeline(service, limits)
        texts = []
        for caller, query in calls:
            result = await pipeline.call("session_search", {"query": query}, Caller(caller))
            texts.append(result.text if result.error is None else "")
        out[mode] = texts
asyncio.run(run())
print(json.dumps(out))
"""


def _side(code: Path, data: Path, logs: Path, modes: list[str], calls: list[list[str]]) -> Any:
    env = {**os.environ, "PYTHONPATH": str(code)}
    done = subprocess.run(
        [sys.executable, "-c", SIDE, str(code), str(data), str(logs), ",".join(modes)],
        input=json.dumps(calls),
        capture_output=True,
        text=True,
        env=env,
        cwd=code,
        timeout=3600,
    )
    if done.returncode != 0:
        raise SystemExit(f"{code}: the search run failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout)


def _score(ranked: list[str], relevant: set[str]) -> tuple[float, float, float, bool]:
    """hit@1, hit@5, reciprocal rank within 10, and whether nothing came back."""
    rank = next((i for i, sid in enumerate(ranked[:10], 1) if sid in relevant), None)
    return (
        float(bool(ranked[:1]) and ranked[0] in relevant),
        float(any(sid in relevant for sid in ranked[:5])),
        0.0 if rank is None else 1.0 / rank,
        not ranked,
    )


def _table(title: str, rows: dict[str, list[tuple[str, tuple[float, float, float, bool]]]]) -> None:
    print(f"\n{title}")
    print("| mode | kind | queries | hit@1 | hit@5 | MRR@10 | no result |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for mode, scored in rows.items():
        for kind in ("all", *KINDS):
            picked = [s for k, s in scored if kind in ("all", k)]
            if not picked:
                continue
            n = len(picked)
            h1, h5, mrr, none = (sum(x[i] for x in picked) / n for i in range(4))
            print(f"| {mode} | {kind} | {n} | {h1:.0%} | {h5:.0%} | {mrr:.3f} | {none:.0%} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline-src", type=checkout, default=None, help="e.g. 970ce9a")
    parser.add_argument("--queries", type=Path, default=QUERIES)
    parser.add_argument("--modes", default="phrase,words", help="this tree's modes")
    parser.add_argument("--holdout-only", action="store_true")
    parser.add_argument("--tuning-only", action="store_true")
    parser.add_argument("--out", type=Path, default=OUT / "relevance")
    args = parser.parse_args()
    if not CORPUS.is_dir():
        raise SystemExit(f"the relevance corpus is missing: {CORPUS} (../shared beside the clone)")
    queries = json.loads(args.queries.read_text())
    if args.holdout_only:
        queries = [q for q in queries if q.get("holdout")]
    elif args.tuning_only:
        queries = [q for q in queries if not q.get("holdout")]
    args.out.mkdir(parents=True, exist_ok=True)
    callers = _callers()
    pooled_caller = sorted(callers.values())[0]
    corpora = {
        "per repository (23 workspaces)": (
            CORPUS / "projects",
            [[callers[q["workspace"]], q["query"]] for q in queries],
        ),
        "pooled (every session in one workspace)": (
            _pooled(args.out),
            [[pooled_caller, q["query"]] for q in queries],
        ),
    }
    sides: list[tuple[str, Path, list[str]]] = [("this tree", ROOT, args.modes.split(","))]
    if args.baseline_src is not None:
        sides.append(("970ce9a", args.baseline_src, ["phrase"]))
    report: dict[str, Any] = {}
    for name, (logs, calls) in corpora.items():
        rows: dict[str, list[tuple[str, tuple[float, float, float, bool]]]] = {}
        for side, code, modes in sides:
            data = args.out / f"data-{side.replace(' ', '-')}-{logs.name}"
            texts = _side(code, data, logs, modes, calls)
            for mode, outputs in texts.items():
                label = f"{side}: {mode}"
                rows[label] = []
                for q, text in zip(queries, outputs, strict=True):
                    ranked = _HIT.findall(text)
                    rows[label].append((q["kind"], _score(ranked, set(q["relevant"]))))
                    report.setdefault(name, {}).setdefault(label, []).append(
                        {"id": q["id"], "ranked": ranked[:10]}
                    )
        _table(name, rows)
    (OUT / "relevance.json").write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
