"""The fixed mix of the five tools that the CPU and Kafka benchmarks send, drawn from a
data dir's own sessions, and how to run a checkout's ``sessionq`` (this tree or a
baseline) as a subprocess.

A mix is deterministic for a seed: the same calls, in the same order, for every side of
a comparison, so per-call figures of two code versions differ only by their code.
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import sys
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

ROOT: Final = Path(__file__).resolve().parents[1]
REAL_CORPUS: Final = ROOT.parent / "shared" / "corpus" / "dsh"
TOOLS: Final = (
    "session_search",
    "session_event_search",
    "session_trace",
    "session_event_trace",
    "session_event_read",
)
# Words of the real corpus: common, rare, a phrase, CJK, an identifier, no match.
REAL_QUERIES: Final = (
    "the",
    "subagent",
    "exactly",
    "compaction",
    "文件结构",
    "child answer",
    "task",
    "error",
    "PONG",
    "zebra quantum",
)


@dataclass(frozen=True, slots=True)
class Call:
    tool: str
    arguments: dict[str, Any]
    caller: str
    workspace: str


def corpus_queries(corpus: Path) -> list[str]:
    """The Kafka benchmark's queries over a generated corpus (``bench/gen_corpus.py``):
    English words of rank 1 to 10,000, a two-word phrase, Chinese words, an identifier
    and two single-document tokens, from its manifest's vocabulary."""
    import json

    return manifest_queries(json.loads((corpus / "manifest.json").read_text()))


def manifest_queries(manifest: dict[str, Any]) -> list[str]:
    """``corpus_queries`` from a manifest read already."""
    words, classes = manifest["vocabulary"]["words"], manifest["vocabulary"]["classes"]

    def pick(cls: str, rank: int) -> str:
        for i in range(rank - 1, len(words)):
            if classes[i] == cls:
                return str(words[i])
        raise LookupError(cls)

    en = [pick("en", r) for r in (1, 10, 100, 1000, 3000, 10000)]
    return [
        *en,
        f"{en[0]} {pick('en', 2)}",
        pick("zh", 5),
        pick("zh", 2000),
        pick("ident", 50),
        *(manifest.get("unique_tokens") or [])[:2],
    ]


def checkout(value: str) -> Path:
    """An ``argparse`` type for another checkout's root (``--baseline-src``, ``--against``):
    it must hold ``indexer/`` and ``worker/``. Its code runs with the checkout first on
    ``sys.path``, so a wrong path would silently run this tree's code on both sides."""
    path = Path(value)
    missing = [d for d in ("indexer", "worker") if not (path / d).is_dir()]
    if missing:
        raise argparse.ArgumentTypeError(f"{value} is no sessionq checkout (no {missing[0]}/)")
    return path.resolve()


def sessionq_argv(src: Path | None) -> list[str]:
    """The command line of ``sessionq`` from checkout ``src`` (None: this tree), run by
    this interpreter with ``src`` first on ``sys.path`` so its packages win."""
    where = str(src if src is not None else ROOT)
    code = (
        f"import sys; sys.path.insert(0, {where!r}); sys.argv[0] = 'sessionq'; "
        "from worker.cli.main import main; sys.exit(main())"
    )
    return [sys.executable, "-c", code]


def workspaces(db: Path) -> dict[str, list[tuple[str, int]]]:
    """Workspace -> its sessions (id, next seq) for workspaces of two or more sessions."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows = conn.execute(
            "SELECT id, cwd, next_seq FROM sessions WHERE cwd IS NOT NULL ORDER BY id"
        ).fetchall()
    finally:
        conn.close()
    by: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for sid, cwd, nxt in rows:
        by[str(cwd)].append((str(sid), int(nxt)))
    return {c: m for c, m in sorted(by.items()) if len(m) >= 2 and any(n > 0 for _, n in m)}


def call_for(
    tool: str, rng: random.Random, members: Sequence[tuple[str, int]], queries: Sequence[str]
) -> tuple[str, dict[str, Any], str]:
    """One call of ``tool`` by a member of a workspace on another member with events:
    (tool, arguments, caller)."""
    targets = [m for m in members if m[1] > 0]
    target, length = rng.choice(targets)
    caller = rng.choice([m[0] for m in members if m[0] != target] or [target])
    query = rng.choice(queries)
    if tool == "session_search":
        args: dict[str, Any] = {"query": query}
        if rng.random() < 0.2:
            args["event_types"] = ["user/message", "assistant/message"]
            args["event_surfaces"] = ["current"]
    elif tool == "session_event_search":
        args = {"session_id": target, "query": query}
    elif tool == "session_trace":
        args = {"session_id": target}
    elif tool == "session_event_trace":
        args = {"session_id": target, "seq": rng.randrange(length)}
    else:
        args = {"session_id": target, "seq": rng.randrange(length), "before": 5, "after": 5}
    return tool, args, caller


def fixed_mix(
    db: Path, per_tool: int, *, seed: int = 1, queries: Sequence[str] = REAL_QUERIES
) -> dict[str, list[Call]]:
    """``per_tool`` calls of each of the five tools, callers and targets drawn from the
    workspaces of the store at ``db`` (weighted by their session count)."""
    by = workspaces(db)
    spaces = list(by)
    weights = [len(by[c]) for c in spaces]
    rng = random.Random(seed)
    mix: dict[str, list[Call]] = {}
    for tool in TOOLS:
        calls = []
        for _ in range(per_tool):
            cwd = rng.choices(spaces, weights)[0]
            name, args, caller = call_for(tool, rng, by[cwd], queries)
            calls.append(Call(name, args, caller, cwd))
        mix[tool] = calls
    return mix


def dirty() -> list[str]:
    """Uncommitted changes of the product code measured (others edit it concurrently)."""
    import subprocess

    out = subprocess.run(
        ["git", "status", "--porcelain", "--", "indexer", "worker"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    return [line.strip() for line in out.splitlines()]


def loadavg() -> str:
    """The 1, 5 and 15 minute load averages, as ``uptime`` prints them."""
    import os

    return " ".join(f"{x:.2f}" for x in os.getloadavg())
