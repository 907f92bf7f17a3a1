"""Byte-for-byte comparison of the five tools' replies between this tree and another
checkout, over the real corpus with every session as caller.

Each side runs in a child process with its checkout first on ``sys.path``: it ingests
``shared/corpus/dsh`` into a data dir of its own and answers the same call set in-process
(``Pipeline.call``), writing one JSON line per call (the case, then the reply text or
``CODE: message``). The call set, per caller (every stored session): ``session_search``
of ten queries (one also with type and surface filters, one with a parent filter),
``session_event_search`` of four queries on itself and on up to six other sessions of
its workspace, ``session_trace``, ``session_event_read`` and ``session_event_search`` of
a session of another workspace (refused), ``session_trace`` of itself and those
sessions, and
``session_event_trace`` / ``session_event_read`` (±3) of five seqs of each. The
comparison prints how many calls were made and every case whose reply differs.

Run: ``nice .venv/bin/python bench/compare_outputs.py --against /tmp/perf-start``
(a checkout of the commit to compare with, e.g. ``git worktree add /tmp/perf-start
main``). Exit 0 when every reply is identical.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Final

ROOT: Final = Path(__file__).resolve().parents[1]
CORPUS: Final = ROOT.parent / "shared" / "corpus" / "dsh"
QUERIES: Final = (
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
EVENT_QUERIES: Final = ("the", "file", "compaction", "tool")


def cases(db: Path) -> list[dict[str, Any]]:
    """The call set over the store at ``db`` (module docstring), in a fixed order."""
    import sqlite3

    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    rows = conn.execute("SELECT id, cwd, parent, next_seq FROM sessions ORDER BY id").fetchall()
    conn.close()
    by_cwd: dict[Any, list[tuple[str, int]]] = {}
    for sid, cwd, _, nxt in rows:
        by_cwd.setdefault(cwd, []).append((sid, int(nxt)))
    out: list[dict[str, Any]] = []
    for sid, cwd, parent, nxt in rows:
        mates = [m for m in by_cwd.get(cwd, []) if m[0] != sid][:6] if cwd is not None else []
        for q in QUERIES:
            out.append({"tool": "session_search", "arguments": {"query": q}, "caller": sid})
        out.append(
            {
                "tool": "session_search",
                "arguments": {
                    "query": "the",
                    "event_types": ["user/message", "assistant/message"],
                    "event_surfaces": ["current"],
                },
                "caller": sid,
            }
        )
        if parent is not None:
            out.append(
                {
                    "tool": "session_search",
                    "arguments": {
                        "query": "the",
                        "parent_session_ids": [parent],
                        "include_root_sessions": True,
                    },
                    "caller": sid,
                }
            )
        foreign = next((r[0] for r in rows if r[1] != cwd), None)
        if foreign is not None:  # refused, and exactly as a missing session is
            for name in ("session_trace", "session_event_read", "session_event_search"):
                extra = {"seq": 0} if name == "session_event_read" else {}
                extra |= {"query": "the"} if name == "session_event_search" else {}
                out.append(
                    {"tool": name, "arguments": {"session_id": foreign, **extra}, "caller": sid}
                )
        for target, length in [(sid, int(nxt)), *mates]:
            named = {} if target == sid else {"session_id": target}
            for q in EVENT_QUERIES:
                out.append(
                    {
                        "tool": "session_event_search",
                        "arguments": {**named, "query": q},
                        "caller": sid,
                    }
                )
            out.append({"tool": "session_trace", "arguments": dict(named), "caller": sid})
            for k in range(5):
                seq = (length * k) // 5 if length else k
                out.append(
                    {
                        "tool": "session_event_trace",
                        "arguments": {**named, "seq": seq},
                        "caller": sid,
                    }
                )
                out.append(
                    {
                        "tool": "session_event_read",
                        "arguments": {**named, "seq": seq, "before": 3, "after": 3},
                        "caller": sid,
                    }
                )
    return out


def child(data: Path, out: Path, mode: str | None = None) -> int:
    """``compare_outputs.py _child DATA OUT`` (its checkout first on ``sys.path``)."""
    import asyncio
    import importlib
    import logging

    from indexer.logs.roots import discover
    from indexer.query.service import StoreQueryService

    # worker/calls/ since the transports moved; asked of the checkout (its first entry on
    # sys.path), not of the import system: an editable install of this tree would answer
    calls = "worker.calls." if Path(sys.path[0], "worker", "calls").is_dir() else "worker."
    Pipeline = importlib.import_module(calls + "pipeline").Pipeline
    ToolLimits = importlib.import_module(calls + "limits").ToolLimits

    try:
        from indexer.sources.files import ingest_files
        from indexer.store.records.store import Store
    except ImportError:  # a checkout older than the record-path layout (this tree is on
        # sys.path too, so its newer module may be found and fail on the old package)
        from indexer.ingest import ingest_files  # type: ignore[import-not-found,no-redef]
        from indexer.store.data_dir import Store  # type: ignore[import-not-found,no-redef]
    from worker.tools.access import Caller

    logging.disable(logging.WARNING)  # expected tool errors log their diagnostics
    store = Store(data)
    try:
        ingest_files(store, discover([CORPUS]))
    finally:
        store.close()
    calls = cases(data / "store.sqlite3")
    service = StoreQueryService(data)
    moded = mode is not None and "search_mode" in ToolLimits.model_fields
    pipeline = Pipeline(service, ToolLimits(search_mode=mode) if moded else None)

    async def run() -> None:
        with out.open("w") as f:
            for c in calls:
                reply = await pipeline.call(c["tool"], c["arguments"], Caller(c["caller"]))
                text = (
                    reply.output
                    if reply.error is None
                    else f"{reply.error.code}: {reply.error.message}"
                )
                f.write(json.dumps([c, text], ensure_ascii=False) + "\n")

    asyncio.run(run())
    service.close()
    return 0


def run_side(src: Path, tmp: Path, name: str, mode: str | None = None) -> Path:
    out = tmp / f"{name}.jsonl"
    code = (
        f"import sys; sys.path.insert(0, {str(src)!r}); "
        f"sys.path.insert(1, {str(ROOT)!r}); import importlib.util as u; "
        f"s = u.spec_from_file_location('compare_outputs', {str(Path(__file__))!r}); "
        "m = u.module_from_spec(s); s.loader.exec_module(m); "
        f"sys.exit(m.child(__import__('pathlib').Path({str(tmp / name)!r}), "
        f"__import__('pathlib').Path({str(out)!r}), {mode!r}))"
    )
    subprocess.run([sys.executable, "-c", code], cwd=tmp, check=True)
    return out


def main(argv: list[str] | None = None) -> int:
    # Imported here, not at the top: the children load this file with the other
    # checkout first on ``sys.path``, whose ``bench`` package may predate ``checkout``.
    sys.path.insert(0, str(ROOT))
    from bench.mix import checkout

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--against", type=checkout, required=True, help="checkout to compare with")
    ap.add_argument("--keep", type=Path, default=None, help="write both reply files here")
    ap.add_argument(
        "--search-mode",
        default=None,
        help="this search mode on a side that has modes (a checkout before them: phrase)",
    )
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="compare-outputs-") as t:
        tmp = Path(t)
        mine = run_side(ROOT, tmp, "this", args.search_mode)
        theirs = run_side(args.against, tmp, "against", args.search_mode)
        a = mine.read_text().splitlines()
        b = theirs.read_text().splitlines()
        if args.keep is not None:
            args.keep.mkdir(parents=True, exist_ok=True)
            (args.keep / "this.jsonl").write_text(mine.read_text())
            (args.keep / "against.jsonl").write_text(theirs.read_text())
    differ = [i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y]
    print(f"{len(a)} calls here, {len(b)} there; {len(differ)} replies differ")
    for i in differ[:20]:
        print(f"  {json.loads(a[i])[0]}")
    return 0 if len(a) == len(b) and not differ else 1


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "_child":
        sys.exit(child(Path(sys.argv[2]), Path(sys.argv[3])))
    sys.exit(main())
