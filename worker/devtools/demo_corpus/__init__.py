"""A realistic, deterministic demo corpus of dsh session logs (``sessionq demo-corpus``).

``write_demo_corpus(out, sessions, seed)`` lays the logs out as a dsh persistence root,
``<out>/--<project key>--/<encoded session id>/session.jsonl`` (``_no-cwd`` for sessions
without a workspace), so ``discover`` and ``implied_session_id`` accept them exactly as
they accept a real ``$DSH_HOME/sessions``. The content is coding work in three
workspaces plus one session without a cwd, in English and Chinese: turns and steps,
streamed ``assistant/chunk`` events (some packed into ``text-chunks`` rows, as dsh
writes them), ``tool/call`` + ``tool/result`` pairs, ``todo/write``, ``session/title``
events, subagent children (``parentSession``, ``origin: "subagent"``,
``delegationDepth: 1``) and one compaction (an ``assistant/message`` whose
``{"op": "replace"}`` surfaceOp shadows the earlier conversation and cites every
shadowed node in ``sourceEventSeqs``).

Everything random (ids, times, how deltas are split and packed, follow-up wording) comes
from one ``random.Random(seed)``: the same ``(sessions, seed)`` writes byte-identical
files. A ``.sessionq-demo.json`` summary beside the project folders marks the directory
as a demo root (a later run may rewrite it; a non-empty directory without it is
refused) and lets ``example_calls`` build ready-to-paste calls with real session ids.

Modules: ``model`` (what a scenario is made of), ``scenarios`` (the content, one module
per workspace), ``builder`` (one session log), ``writer`` (the corpus and its root),
``layout`` (on-disk names), ``summary`` (``.sessionq-demo.json``), ``examples`` (example
calls). ``python -m worker.devtools.demo_corpus --out DIR`` is ``sessionq demo-corpus``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from worker.devtools.demo_corpus.examples import (
    ExampleCall,
    example_calls,
    example_curls,
    print_examples,
)
from worker.devtools.demo_corpus.layout import encode_segment, project_key
from worker.devtools.demo_corpus.summary import DemoSession, DemoSummary, load_summary
from worker.devtools.demo_corpus.writer import MIN_SESSIONS, write_demo_corpus

__all__ = [
    "MIN_SESSIONS",
    "DemoSession",
    "DemoSummary",
    "ExampleCall",
    "cli_main",
    "encode_segment",
    "example_calls",
    "example_curls",
    "load_summary",
    "main",
    "print_examples",
    "project_key",
    "write_demo_corpus",
]


def cli_main(out: Path, sessions: int, seed: int) -> int:
    """``sessionq demo-corpus``: write the corpus and print a one-line summary."""
    try:
        summary = write_demo_corpus(Path(out), sessions, seed)
    except (ValueError, OSError) as exc:
        print(f"sessionq demo-corpus: {exc}", file=sys.stderr)
        return 2 if isinstance(exc, ValueError) else 1
    print(summary.line(), flush=True)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m worker.devtools.demo_corpus", description="write a demo dsh session root"
    )
    parser.add_argument("--out", type=Path, required=True, help="output directory")
    parser.add_argument("--sessions", type=int, default=24, help="number of sessions")
    parser.add_argument("--seed", type=int, default=7, help="random seed")
    args = parser.parse_args(argv)
    return cli_main(args.out, args.sessions, args.seed)
