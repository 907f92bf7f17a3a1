"""sessionq store benchmark: ingest rate, index size, peak RSS, session-search latency,
side by side with the SQLite FTS5 baseline and tantivy-py's bare indexing rate.

One run (see bench/README.md):

1. generate the corpora (unless ``--skip-gen``): (a) ``mix`` -- the real event mix, about
   2,000,000 events; (b) ``search`` -- about 1,000,000 documents over 10,000 sessions;
2. for (a) and (b): sessionq ``ingest_files`` into a fresh data dir and the FTS5 baseline
   ingest of the same files, each in its own subprocess (peak RSS = the child's
   ``ru_maxrss``);
3. (b): tantivy-py bare indexing of the same documents (pre-built ``Document`` values, only
   ``add_document`` + ``commit`` timed, same schema/analyzer/writer settings as the store);
4. (b): session-search latency over a fixed query set, sessionq vs FTS5;
5. print a table with PASS/MISS against the targets and write ``bench/out/results.json``.

``--scale 0.02`` runs everything on 2% of the default sizes (a quick smoke run).
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
# A child measuring another checkout's code (``--baseline-src``) imports its ``indexer``.
if os.environ.get("SESSIONQ_BENCH_CODE"):
    sys.path.insert(0, os.environ["SESSIONQ_BENCH_CODE"])

ROOT: Final = Path(__file__).resolve().parents[1]
OUT: Final = ROOT / "bench" / "out"
MIX_EVENTS: Final = 2_000_000
SEARCH_SESSIONS: Final = 10_000
DAY_MS: Final = 86_400_000

TARGET_INGEST_EPS: Final = 50_000
TARGET_P50_MS: Final = 5.0
TARGET_P99_MS: Final = 30.0
TARGET_P99_RATIO: Final = 5.0


# ---- helpers ------------------------------------------------------------------------------------
def _peak_rss_kb() -> int:
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


def _dir_bytes(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _files_bytes(paths: Sequence[Path]) -> int:
    return sum(p.stat().st_size for p in paths if p.exists())


def _corpus_files(corpus: Path) -> list[Path]:
    from indexer.logs.roots import discover

    return discover([corpus])


def _percentile(samples: Sequence[float], p: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(samples)
    if not ordered:
        return float("nan")
    k = max(0, min(len(ordered) - 1, int(-(-p * len(ordered) // 100)) - 1))
    return ordered[k]


def _weighted_percentile(groups: Sequence[Sequence[float]], p: float) -> float:
    """Percentile over all samples where every group (query) weighs the same."""
    pairs = sorted((x, 1.0 / len(g)) for g in groups if g for x in g)
    if not pairs:
        return float("nan")
    total = sum(w for _, w in pairs)
    acc = 0.0
    for x, w in pairs:
        acc += w
        if acc >= total * p / 100 - 1e-12:
            return x
    return pairs[-1][0]


def _cpu_busy_seconds() -> float:
    """Busy CPU time of the whole machine so far (all cores, from /proc/stat)."""
    try:
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:9]]
    except (OSError, ValueError):
        return 0.0
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def _loadavg() -> float:
    try:
        with open("/proc/loadavg") as f:
            return float(f.read().split()[0])
    except (OSError, ValueError):
        return float("nan")


QUIET: dict[str, float] = {"wait": 0.0, "cores": 0.3}


def _wait_for_quiet() -> float:
    """Wait (at most ``QUIET["wait"]`` seconds) until other processes use less than
    ``QUIET["cores"]`` cores, measured over 3-second windows. Returns the seconds waited."""
    if QUIET["wait"] <= 0:
        return 0.0
    started = time.perf_counter()
    while True:
        busy0 = _cpu_busy_seconds()
        time.sleep(3.0)
        if (_cpu_busy_seconds() - busy0) / 3.0 < QUIET["cores"]:
            break
        if time.perf_counter() - started > QUIET["wait"]:
            print("  (machine still busy; measuring anyway)", flush=True)
            break
    return round(time.perf_counter() - started, 1)


def _run_child(mode: str, args: dict[str, Any], code: Path | None = None) -> dict[str, Any]:
    """Run ``bench_store.py _child <mode>`` and return the JSON it prints last; with
    ``code``, the child imports ``indexer`` from that checkout (``--baseline-src``).

    Adds what else the machine was doing meanwhile: ``other_cores`` = busy CPU time of the
    whole machine minus the child's own CPU time, per wall second (0 on a quiet machine).
    """
    cmd = [sys.executable, "-m", "bench.bench_store", "_child", mode, json.dumps(args)]
    env = dict(os.environ)
    env.pop("SESSIONQ_BENCH_CODE", None)
    if code is not None:
        env["SESSIONQ_BENCH_CODE"] = str(code)
    waited = _wait_for_quiet()
    load0, busy0, wall0 = _loadavg(), _cpu_busy_seconds(), time.perf_counter()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = time.perf_counter() - wall0
    busy = _cpu_busy_seconds() - busy0
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"child {mode} failed with exit code {proc.returncode}")
    result: dict[str, Any] = json.loads(lines[-1])
    child_cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    # A parallel ingest's workers are the fork server's children, not ours.
    child_cpu += float(result.get("worker_cpu_seconds", 0.0))
    result["machine_load"] = {
        "loadavg_before": load0,
        "loadavg_after": _loadavg(),
        "child_cpu_seconds": round(child_cpu, 2),
        "child_wall_seconds": round(wall, 2),
        "other_cores": round(max(0.0, busy - child_cpu) / wall, 2) if wall > 0 else 0.0,
        "waited_for_quiet_seconds": waited,
    }
    return result


def _code_fingerprint() -> dict[str, Any]:
    """What code was measured: git HEAD, and a hash of the indexer sources as they are
    (other engineers edit them concurrently)."""
    import hashlib

    digest = hashlib.sha256()
    for path in sorted((ROOT / "indexer").rglob("*.py")):
        digest.update(path.relative_to(ROOT).as_posix().encode())
        digest.update(path.read_bytes())
    head = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    package = ROOT / "indexer" / "store" / "tantivy"
    tantivy_mtime = max(p.stat().st_mtime for p in package.glob("*.py"))
    return {
        "git_head": head,
        "indexer_sha256": digest.hexdigest()[:16],
        "tantivy_index_mtime": time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(tantivy_mtime)),
    }


# ---- children -----------------------------------------------------------------------------------
def child_ingest_sessionq(args: dict[str, Any]) -> dict[str, Any]:
    import indexer
    from indexer.sources.files import ingest_files
    from indexer.store.records.store import Store

    data = Path(args["data"])
    shutil.rmtree(data, ignore_errors=True)
    files = _corpus_files(Path(args["corpus"]))
    # The CLI's default (one worker per core) where this code has parallel ingest.
    kwargs: dict[str, Any] = {}
    jobs = 1
    if "jobs" in inspect.signature(ingest_files).parameters:
        from indexer.sources.parallel import default_jobs

        jobs = default_jobs(int(args.get("jobs", 0)))
        kwargs["jobs"] = jobs
    store_kwargs: dict[str, Any] = {}
    if args.get("redaction") is not None:  # this code's Store takes a redaction mode
        from indexer.redact import Redaction

        store_kwargs["redaction"] = Redaction(args["redaction"])
    cpu0 = time.process_time()
    started = time.perf_counter()
    store = Store(data, **store_kwargs)
    summary = ingest_files(store, files, **kwargs)
    committed = time.perf_counter()
    # This process's CPU (all threads) plus its ingest workers'.
    cpu = time.process_time() - cpu0 + getattr(summary, "worker_cpu_seconds", 0.0)
    store.close()
    closed = time.perf_counter()
    return {
        "files": summary.files,
        "sessions": summary.sessions,
        "events": summary.events,
        "documents": summary.documents,
        "rejected": len(summary.rejected),
        "first_rejections": [r.reason for r in summary.rejected[:3]],
        "seconds": committed - started,
        "cpu_seconds": cpu,
        "close_seconds": closed - committed,
        "jobs": jobs,
        "worker_cpu_seconds": getattr(summary, "worker_cpu_seconds", 0.0),
        "peak_rss_kb": _peak_rss_kb(),
        "indexer": str(Path(indexer.__file__).parent),
    }


def child_ingest_fts5(args: dict[str, Any]) -> dict[str, Any]:
    from bench.fts5_baseline import ingest

    files = _corpus_files(Path(args["corpus"]))
    cpu0 = time.process_time()
    started = time.perf_counter()
    counts = ingest(Path(args["db"]), files)
    seconds = time.perf_counter() - started
    cpu = time.process_time() - cpu0
    return {
        "files": counts.files,
        "sessions": counts.sessions,
        "events": counts.events,
        "documents": counts.documents,
        "rejected": counts.rejected,
        "seconds": seconds,
        "cpu_seconds": cpu,
        "peak_rss_kb": _peak_rss_kb(),
    }


def child_tantivy_bare(args: dict[str, Any]) -> dict[str, Any]:
    """tantivy-py alone: the store's schema, analyzer and writer settings, pre-built docs."""
    import orjson
    import tantivy

    from indexer.logs.reader import read_log
    from indexer.store.tantivy import analyzer, schema
    from indexer.surface.fold import classify

    try:
        from indexer.store.tantivy import words
    except ImportError:  # a checkout before the search modes
        words = None  # type: ignore[assignment]
    from indexer.surface.text import extract_text

    files = _corpus_files(Path(args["corpus"]))
    prep_started = time.perf_counter()
    docs: list[Any] = []
    for ordinal, path in enumerate(files, start=1):
        log = read_log(path)
        header = log.header
        sid = header.id
        session_term = schema.raw_term(sid)
        cwd = schema.nullable_term(header.cwd)
        parent = schema.nullable_term(header.parent_session)
        for event, surface in zip(log.events, classify(log.events), strict=True):
            text = extract_text(event.type, event.data)
            if not text:
                continue
            text = analyzer.sanitize_text(text)
            doc = tantivy.Document()
            doc.add_text("key", schema.doc_key(sid, event.seq))
            doc.add_text("session", session_term)
            doc.add_unsigned("sid", ordinal)
            doc.add_integer("seq", event.seq)
            doc.add_text("type", schema.raw_term(event.type))
            doc.add_integer("time", event.time)
            doc.add_text("surface", schema.raw_term(surface))
            doc.add_text("text", text)
            pairs = analyzer.pairs_text(analyzer.analyze(text))
            if pairs:
                doc.add_text("pairs", pairs)
            if words is not None:  # a checkout with the words field (format 5)
                doc.add_text("words", words.words_text(text, " ".join(analyzer.analyze(text))))
            doc.add_text("cwd", cwd)
            doc.add_text("parent", parent)
            doc.add_integer("created_at", header.created_at)
            doc.add_bytes("meta", orjson.dumps([sid, event.type, surface, event.seq, event.time]))
            docs.append(doc)
    prep_seconds = time.perf_counter() - prep_started
    path = Path(args["index"])
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    index = tantivy.Index(schema.build_schema(), path=str(path))
    index.register_tokenizer(analyzer.ANALYZER_NAME, analyzer.build_analyzer())
    if words is not None:
        index.register_tokenizer(words.STEMS_ANALYZER_NAME, words.STEMS_ANALYZER)
    writer = index.writer(heap_size=int(args["heap"]), num_threads=int(args["threads"]))
    cpu0 = time.process_time()
    started = time.perf_counter()
    for doc in docs:
        writer.add_document(doc)
    writer.commit()
    seconds = time.perf_counter() - started
    cpu = time.process_time() - cpu0
    writer.wait_merging_threads()
    return {
        "documents": len(docs),
        "seconds": seconds,
        "cpu_seconds": cpu,
        "prep_seconds": prep_seconds,
        "threads": int(args["threads"]),
        "peak_rss_kb": _peak_rss_kb(),
    }


def _sessionq_runner(
    data: Path, mode: str = "phrase"
) -> tuple[Callable[[dict[str, Any]], int], Callable[[], None]]:
    from indexer.model.search import (
        CwdFilter,
        EventMetadataFilter,
        SessionFilter,
        SurfaceFilter,
        TimeFilter,
        TypeFilter,
    )
    from indexer.query.service import StoreQueryService

    svc = StoreQueryService(data)

    def run(q: dict[str, Any]) -> int:
        sf: list[SessionFilter] = []
        ef: list[EventMetadataFilter] = []
        if q.get("cwd") is not None:
            sf.append(CwdFilter((q["cwd"],)))
        if q.get("types") is not None:
            ef.append(TypeFilter(tuple(q["types"])))
        if q.get("surfaces") is not None:
            ef.append(SurfaceFilter(tuple(q["surfaces"])))
        if q.get("time_from") is not None:
            ef.append(TimeFilter(from_=q["time_from"]))
        if mode == "phrase":  # a checkout before the search modes has no ``mode``
            page = svc.search_sessions(q["query"], sf, ef, limit=101)
        else:
            page = svc.search_sessions(q["query"], sf, ef, limit=101, mode=mode)  # type: ignore[arg-type]
        return len(page.items)

    return run, svc.close


def _fts5_runner(db: Path) -> tuple[Callable[[dict[str, Any]], int], Callable[[], None]]:
    from bench.fts5_baseline import Fts5Search

    fts = Fts5Search(db)

    def run(q: dict[str, Any]) -> int:
        hits = fts.search_sessions(
            q["query"],
            cwd=q.get("cwd"),
            types=q.get("types"),
            surfaces=q.get("surfaces"),
            time_from=q.get("time_from"),
        )
        return len(hits)

    return run, fts.close


def _sessionq_doc_count(data: Path, query: str) -> int | None:
    """Matching documents for the report (uses the index's own query builder)."""
    try:
        from indexer.model.search import Query
        from indexer.store.tantivy import TantivyIndex, analyze
        from indexer.store.tantivy.queries import text_query

        index = TantivyIndex(data / "tantivy", writable=False)
        searcher = index._searcher()
        tokens = analyze(Query.parse(query).text)
        if searcher is None or not tokens:
            return 0
        result: Any = searcher.search(text_query(index._schema, tokens), limit=1, count=True)
        return int(result.count or 0)
    except Exception:  # the count is informational only
        return None


def child_search(args: dict[str, Any]) -> dict[str, Any]:
    engine = args["engine"]
    if engine == "sessionq":
        run, close = _sessionq_runner(Path(args["data"]), args.get("mode", "phrase"))
    else:
        run, close = _fts5_runner(Path(args["db"]))
    reps, warmup, budget = int(args["reps"]), int(args["warmup"]), float(args["budget"])
    out: list[dict[str, Any]] = []
    for q in args["queries"]:
        hits = 0
        for _ in range(warmup):
            hits = run(q)
        samples: list[float] = []
        spent = 0.0
        while len(samples) < reps and (len(samples) < 5 or spent < budget):
            t0 = time.perf_counter()
            hits = run(q)
            dt = time.perf_counter() - t0
            spent += dt
            samples.append(dt * 1000.0)
        entry: dict[str, Any] = {"name": q["name"], "hits": hits, "samples_ms": samples}
        if engine == "sessionq":
            entry["matching_docs"] = _sessionq_doc_count(Path(args["data"]), q["query"])
        out.append(entry)
    close()
    return {"engine": engine, "queries": out, "peak_rss_kb": _peak_rss_kb()}


def child_reads(args: dict[str, Any]) -> dict[str, Any]:
    """Exact reads through ``StoreQueryService`` (the same calls in every schema
    version): for targets in the middle of the longest sessions, a ±50 window
    (``session_event_read``'s widest), the target alone, and its event trace."""
    import random
    import sqlite3

    import indexer
    from indexer.query.service import StoreQueryService

    data = Path(args["data"])
    conn = sqlite3.connect(f"file:{data / 'store.sqlite3'}?mode=ro", uri=True)
    rows = conn.execute(
        "SELECT id, next_seq FROM sessions WHERE next_seq > 0 ORDER BY next_seq DESC, id"
    ).fetchall()
    conn.close()
    rng = random.Random(int(args.get("seed", 1)))
    longest = rows[: max(1, len(rows) // 10)]
    targets = [
        (sid, rng.randrange(n)) for sid, n in (rng.choice(longest) for _ in range(args["n"]))
    ]
    svc = StoreQueryService(data)
    calls: dict[str, Callable[[str, int], object]] = {
        "window ±50": lambda sid, seq: svc.read_event(sid, seq, before=50, after=50),
        "target only": lambda sid, seq: svc.read_event(sid, seq),
        "event trace": lambda sid, seq: svc.trace_event(sid, seq),
    }
    out: dict[str, list[float]] = {}
    for name, call in calls.items():
        for sid, seq in targets[:20]:  # warm-up
            call(sid, seq)
        samples: list[float] = []
        for sid, seq in targets:
            t0 = time.perf_counter()
            call(sid, seq)
            samples.append((time.perf_counter() - t0) * 1000.0)
        out[name] = samples
    svc.close()
    return {
        "samples_ms": out,
        "targets": len(targets),
        "indexer": str(Path(indexer.__file__).parent),
        "peak_rss_kb": _peak_rss_kb(),
    }


def child_redaction_cost(args: dict[str, Any]) -> dict[str, Any]:
    """The CPU the detection alone takes over a corpus's index texts: every text event's
    semantic text redacted as the writer does (``on``), best of 3 passes."""
    from indexer.logs.reader import read_log
    from indexer.redact import Redaction
    from indexer.surface.text import extract_text

    texts = []
    for path in _corpus_files(Path(args["corpus"])):
        for event in read_log(path).events:
            text = extract_text(event.type, event.data)
            if text:
                texts.append(text)
    on = Redaction("on")
    on.text("warm up: token=abc")  # the rule set loads once per process
    passes = []
    for _ in range(3):
        cpu = time.process_time()
        for text in texts:
            on.text(text)
        passes.append(time.process_time() - cpu)
    return {"texts": len(texts), "chars": sum(map(len, texts)), "cpu_seconds": min(passes)}


CHILDREN: Final[dict[str, Callable[[dict[str, Any]], dict[str, Any]]]] = {
    "redaction-cost": child_redaction_cost,
    "ingest-sessionq": child_ingest_sessionq,
    "ingest-fts5": child_ingest_fts5,
    "tantivy-bare": child_tantivy_bare,
    "search": child_search,
    "reads": child_reads,
}


# ---- where the bytes are ----------------------------------------------------------------------
def sqlite_breakdown(db: Path) -> dict[str, int]:
    """Bytes per table and index (SQLite's ``dbstat``; page counts when it is missing),
    plus the free pages and the WAL."""
    import sqlite3

    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        try:
            out = {
                str(name): int(size)
                for name, size in conn.execute(
                    "SELECT name, SUM(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC"
                )
            }
        except sqlite3.OperationalError:
            out = {"(dbstat unavailable: whole file)": db.stat().st_size}
        page = int(conn.execute("PRAGMA page_size").fetchone()[0])
        out["(free pages)"] = page * int(conn.execute("PRAGMA freelist_count").fetchone()[0])
    finally:
        conn.close()
    wal = Path(f"{db}-wal")
    if wal.exists():
        out["(wal)"] = wal.stat().st_size
    return out


def tantivy_breakdown(index: Path) -> dict[str, int]:
    """Bytes per Tantivy file kind: .store (stored fields), .idx (postings), .pos
    (positions), .term (term dictionaries), .fast, .fieldnorm, other."""
    out: dict[str, int] = {}
    for f in index.iterdir() if index.exists() else []:
        if f.is_file():
            kind = f.suffix or f.name
            out[kind] = out.get(kind, 0) + f.stat().st_size
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def _data_dir_sizes(data: Path) -> dict[str, Any]:
    return {
        "tantivy_bytes": _dir_bytes(data / "tantivy"),
        "sqlite_bytes": sum(_dir_bytes(p) for p in data.iterdir() if p.is_file()),
        "size_bytes": _dir_bytes(data),
        "sqlite_tables": sqlite_breakdown(data / "store.sqlite3"),
        "tantivy_files": tantivy_breakdown(data / "tantivy"),
    }


# ---- query set ----------------------------------------------------------------------------------
def build_queries(manifest: dict[str, Any]) -> list[dict[str, Any]]:
    """A fixed query set picked from the generated vocabulary by Zipf rank."""
    words: list[str] = manifest["vocabulary"]["words"]
    classes: list[str] = manifest["vocabulary"]["classes"]

    def pick(cls: str, rank: int, ok: Callable[[str], bool] = lambda w: True) -> tuple[str, int]:
        for i in range(max(0, rank - 1), len(words)):
            if classes[i] == cls and ok(words[i]):
                return words[i], i + 1
        for i in range(len(words) - 1, -1, -1):
            if classes[i] == cls and ok(words[i]):
                return words[i], i + 1
        raise LookupError(cls)

    def snake(w: str) -> bool:
        return len([p for p in w.split("_") if p]) >= 2

    def camel(w: str) -> bool:
        return "_" not in w and any(c.isupper() for c in w[1:])

    en1, _ = pick("en", 1)
    en2, _ = pick("en", 2)
    en3, _ = pick("en", 3)
    zh_top, zh_top_rank = pick("zh", 1)
    zh_mid, zh_mid_rank = pick("zh", 2_000)
    zh_rare, zh_rare_rank = pick("zh", 40_000)
    queries: list[dict[str, Any]] = []

    def add(name: str, query: str, **filters: Any) -> None:
        queries.append({"name": name, "query": query, **filters})

    for rank in (1, 10, 100, 1_000, 10_000):
        w, r = pick("en", rank)
        add(f"en term rank {r}", w)
    add("en phrase of ranks 1+2", f"{en1} {en2}")
    add("en phrase of ranks 1+2+3", f"{en1} {en2} {en3}")
    w, r = pick("ident", 50, snake)
    add(f"snake_case ident rank {r}", w)
    w, r = pick("ident", 60_000, camel)
    add(f"camelCase ident rank {r}", w)
    add("zh single char (top word's 1st)", zh_top[0])
    add(f"zh word rank {zh_top_rank}", zh_top)
    add(f"zh word rank {zh_mid_rank}", zh_mid)
    add(f"zh phrase rank {zh_mid_rank}+{zh_rare_rank}", zh_mid + zh_rare)
    if manifest.get("unique_tokens"):
        add("unique token (1 doc)", manifest["unique_tokens"][0])
    add("real-log phrase", "use the read tool")
    add("no match", "zzyzx quarkification")

    spaces = [w for w in manifest["workspaces"] if w != "<none>"]
    cwd = spaces[min(4, len(spaces) - 1)]
    t_end = int(manifest["t_end"])
    w100, r100 = pick("en", 100)
    add(f"en rank 1 + cwd {cwd}", en1, cwd=cwd)
    add(f"en rank {r100} + cwd", w100, cwd=cwd)
    add("en phrase 1+2 + type assistant/message", f"{en1} {en2}", types=["assistant/message"])
    add(f"zh word rank {zh_top_rank} + surface current", zh_top, surfaces=["current"])
    w10, r10 = pick("en", 10)
    add(f"en rank {r10} + time last 30 days", w10, time_from=t_end - 30 * DAY_MS)
    add(
        "en rank 1 + cwd + type + surface + time 90d",
        en1,
        cwd=cwd,
        types=["user/message", "assistant/message"],
        surfaces=["current"],
        time_from=t_end - 90 * DAY_MS,
    )
    return queries


# ---- report -------------------------------------------------------------------------------------
def _mark(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def _fmt_rate(x: float) -> str:
    return f"{x:,.0f}"


def _mb(n: int) -> str:
    return f"{n / 1e6:,.1f} MB"


def machine() -> dict[str, Any]:
    mem = 0
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    mem = int(line.split()[1]) * 1024
    except OSError:
        pass
    import sqlite3

    import tantivy

    return {
        "nproc": os.cpu_count(),
        "ram_gib": round(mem / 2**30, 1),
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "tantivy": getattr(tantivy, "__version__", "?"),
        "platform": platform.platform(),
    }


def _other(r: dict[str, Any]) -> str:
    load = r.get("machine_load") or {}
    other = load.get("other_cores")
    return "?" if other is None else f"{other:.2f}"


def _ingest_row(label: str, r: dict[str, Any]) -> str:
    eps = r["events"] / r["seconds"]
    dps = r["documents"] / r["seconds"]
    cpu = r.get("cpu_seconds")
    return (
        f"  {label:<22} {r['events']:>11,} {r['documents']:>10,} {r['seconds']:>8.1f}s "
        f"{'?' if cpu is None else f'{cpu:.1f}s':>7} "
        f"{_fmt_rate(eps):>10} {_fmt_rate(dps):>10} {_mb(r['size_bytes']):>12} "
        f"{r['peak_rss_kb'] / 1024:>8,.0f} MB {_other(r):>6}"
    )


def report(results: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    m = results["machine"]
    lines.append(
        f"machine: nproc={m['nproc']} ram={m['ram_gib']} GiB python={m['python']} "
        f"sqlite={m['sqlite']} tantivy={m['tantivy']}"
    )
    code = results.get("code", {})
    lines.append(
        f"code: git {code.get('git_head', '?')}, indexer sources sha256 "
        f"{code.get('indexer_sha256', '?')} (store/tantivy/ modified "
        f"{code.get('tantivy_index_mtime', '?')})"
    )
    lines.append(f"scale: {results['scale']}; phases run: {', '.join(results['phases_run'])}")
    for kind, c in results["corpora"].items():
        if "events" in c:
            lines.append(
                f"corpus ({kind}): {c['files']:,} files, {c['events']:,} events, "
                f"{c['documents']:,} documents, {_mb(c['bytes'])} of JSONL"
            )
        else:
            lines.append(f"corpus ({kind}): {c['files']:,} files, {_mb(c['bytes'])} of JSONL")
    red = results.get("redaction")
    if red:
        lines.append(
            f"redaction (mix): --redact-secrets on/off ingest wall x{red['ratio']:.3f}, CPU "
            f"x{red['cpu_ratio']:.3f} (median of {len(red['pairs'])} interleaved rounds: "
            + ", ".join(f"x{p['ratio']:.3f}" for p in red["pairs"])
            + f"; on {red['on']['seconds']:.2f} s, off {red['off']['seconds']:.2f} s)"
        )
        if "detection" in red:
            d = red["detection"]
            lines.append(
                f"redaction (mix): detection alone {d['cpu_seconds']:.3f} s CPU over "
                f"{d['texts']:,} index texts = {red['detection_share']:.1%} of the off "
                "ingest's CPU"
            )
    lines.append("")
    lines.append(
        f"  {'ingest':<22} {'events':>11} {'documents':>10} {'wall':>9} {'cpu':>7} "
        f"{'events/s':>10} {'docs/s':>10} {'on disk':>12} {'peak RSS':>11} {'other':>6}"
    )
    for kind in ("mix", "search", "real"):
        ing = results["ingest"].get(kind)
        if not ing:
            continue
        if "reused_from" in ing:
            lines.append(f"  ({kind}: figures reused from the run of {ing['reused_from']})")
        sq, fts = ing["sessionq"], ing["fts5"]
        lines.append(_ingest_row(f"({kind}) sessionq", sq))
        old = ing.get("sessionq_before")
        if old:
            lines.append(_ingest_row(f"({kind}) sessionq before", old))
        lines.append(_ingest_row(f"({kind}) FTS5 baseline", fts))
        ratio = rate_ratio(ing)
        pairs = ing.get("pairs", [])
        if len(pairs) > 1:
            lines.append(
                f"  {'':<22} {len(pairs)} interleaved rounds (rows: the median ones), "
                "sessionq/FTS5 rate per round: "
                + ", ".join(f"x{p['ratio']:.2f}" for p in pairs)
                + f"; median x{ratio:.2f}"
            )
        lines.append(
            f"  {'':<22} sessionq/FTS5 rate x{ratio:.2f}, size x"
            f"{sq['size_bytes'] / max(1, fts['size_bytes']):.2f}, RSS x"
            f"{sq['peak_rss_kb'] / max(1, fts['peak_rss_kb']):.2f}; sessionq size = tantivy "
            f"{_mb(sq['tantivy_bytes'])} + sqlite {_mb(sq['sqlite_bytes'])}"
        )
        jsonl = results["corpora"].get(kind, {}).get("bytes")
        if jsonl:
            parts = [f"sessionq x{sq['size_bytes'] / jsonl:.2f}"]
            if old:
                parts.append(f"before x{old['size_bytes'] / jsonl:.2f}")
            parts.append(f"FTS5 x{fts['size_bytes'] / jsonl:.2f}")
            lines.append(f"  {'':<22} data dir / raw JSONL ({_mb(jsonl)}): " + ", ".join(parts))
        for label, r in (("sessionq", sq), ("before", old)):
            if r and "sqlite_tables" in r:
                top = ", ".join(
                    f"{name} {_mb(size)}"
                    for name, size in list(r["sqlite_tables"].items())[:6]
                    if size
                )
                files = ", ".join(f"{k} {_mb(v)}" for k, v in r["tantivy_files"].items() if v)
                lines.append(f"  {'':<22} {label} sqlite: {top}")
                lines.append(f"  {'':<22} {label} tantivy: {files}")
    bare = results.get("tantivy_bare")
    if bare:
        bare_dps = bare["documents"] / bare["seconds"]
        bare_cpu = bare.get("cpu_seconds")
        lines.append(
            f"  {'(search) tantivy bare':<22} {'':>11} {bare['documents']:>10,} "
            f"{bare['seconds']:>8.1f}s {'?' if bare_cpu is None else f'{bare_cpu:.1f}s':>7} "
            f"{'':>10} {_fmt_rate(bare_dps):>10} "
            f"{_mb(bare['size_bytes']):>12} {bare['peak_rss_kb'] / 1024:>8,.0f} MB "
            f"{_other(bare):>6}"
        )
        lines.append(
            f"  {'':<22} (add_document+commit only, {bare['threads']} indexing thread; "
            f"building the {bare['documents']:,} Documents took {bare['prep_seconds']:.0f}s, "
            "untimed)"
            + (f"; reused from the run of {bare['reused_from']}" if "reused_from" in bare else "")
        )
    lines.append(
        "  (cpu = process CPU time, all threads; other = cores busy with OTHER processes "
        "on this machine during the measurement)"
    )
    search = results.get("search")
    if search:
        lines.append("")
        lines.append(
            f"  {'search (b), limit=101':<46} {'docs':>9} {'hits sq/fts':>11} "
            f"{'sq p50':>8} {'sq p99':>8} {'fts p50':>9} {'fts p99':>9} {'p99 x':>7} {'n':>7}"
        )
        for q in search["queries"]:
            docs = "?" if q["matching_docs"] is None else q["matching_docs"]
            lines.append(
                f"  {q['name'][:46]:<46} {docs:>9} "
                f"{q['sessionq_hits']:>5}/{q['fts5_hits']:<5} "
                f"{q['sessionq_p50']:>8.2f} {q['sessionq_p99']:>8.2f} "
                f"{q['fts5_p50']:>9.2f} {q['fts5_p99']:>9.2f} "
                f"{q['fts5_p99'] / q['sessionq_p99']:>7.1f} {q['sessionq_n']:>3}/{q['fts5_n']:<3}"
            )
        o = search["overall"]
        sq_load = search.get("sessionq_machine_load", {})
        fts_load = search.get("fts5_machine_load", {})
        lines.append(
            f"  (other processes busy: {sq_load.get('other_cores', '?')} cores during the "
            f"sessionq run, {fts_load.get('other_cores', '?')} during the FTS5 run"
            + (
                f"; reused from the run of {search['reused_from']}"
                if "reused_from" in search
                else ""
            )
            + ")"
        )
        if "before" in search:
            b = search["before"]
            lines.append(
                f"  {'ALL, sessionq before (baseline code)':<46} {'':>9} {'':>11} "
                f"{b['p50']:>8.2f} {b['p99']:>8.2f}"
            )
        lines.append(
            f"  {'ALL (each query weighs the same)':<46} {'':>9} {'':>11} "
            f"{o['sessionq_p50']:>8.2f} {o['sessionq_p99']:>8.2f} {o['fts5_p50']:>9.2f} "
            f"{o['fts5_p99']:>9.2f} {o['fts5_p99'] / o['sessionq_p99']:>7.1f}"
        )
    reads = results.get("reads")
    if reads:
        lines.append("")
        lines.append(
            f"  {'exact reads on (a), StoreQueryService':<40} {'p50 ms':>8} {'p99 ms':>8} {'n':>6}"
        )
        for label in ("before", "after"):
            got = reads.get(label)
            if not got:
                continue
            for name, v in got["summary"].items():
                lines.append(
                    f"  {label + ': ' + name:<40} {v['p50']:>8.3f} {v['p99']:>8.3f} {v['n']:>6}"
                )
    lines.append("")
    lines.append("targets:")
    for t in results["targets"]:
        lines.append(f"  [{t['status']}] {t['target']}: {t['value']}")
    return lines


def _targets(results: dict[str, Any]) -> list[dict[str, str]]:
    out: list[dict[str, str]] = []
    mix = results["ingest"].get("mix")
    if mix:
        sq, fts = mix["sessionq"], mix["fts5"]
        eps = sq["events"] / sq["seconds"]
        feps = fts["events"] / fts["seconds"]
        ratio = rate_ratio(mix)
        rounds = len(mix.get("pairs", [])) or 1
        out.append(
            {
                "target": "(a) sessionq ingest >= 50,000 events/s",
                "value": f"{eps:,.0f} events/s",
                "status": _mark(eps >= TARGET_INGEST_EPS),
            }
        )
        out.append(
            {
                "target": "(a) sessionq ingest not slower than FTS5 ingest",
                "value": f"{eps:,.0f} vs {feps:,.0f} events/s (x{ratio:.2f}"
                + (f", median of {rounds} interleaved rounds)" if rounds > 1 else ")"),
                "status": _mark(ratio >= 1.0),
            }
        )
    if mix and results["corpora"].get("mix", {}).get("bytes"):
        size = mix["sessionq"]["size_bytes"] / results["corpora"]["mix"]["bytes"]
        out.append(
            {
                "target": "(a) data dir <= 0.5x the raw JSONL",
                "value": f"x{size:.2f}",
                "status": _mark(size <= 0.5),
            }
        )
    after = results.get("reads", {}).get("after")
    if after:
        worst = max(v["p99"] for v in after["summary"].values())
        out.append(
            {
                "target": "(a) exact reads p99 <= 3 ms (query service, ±50 window worst)",
                "value": f"{worst:.2f} ms",
                "status": _mark(worst <= 3.0),
            }
        )
    search_ing = results["ingest"].get("search")
    if search_ing:
        sq, fts = search_ing["sessionq"], search_ing["fts5"]
        eps = sq["events"] / sq["seconds"]
        feps = fts["events"] / fts["seconds"]
        out.append(
            {
                "target": "(b) sessionq ingest not slower than FTS5 ingest (informative)",
                "value": f"{eps:,.0f} vs {feps:,.0f} events/s (x{eps / feps:.2f}); "
                f"{sq['documents'] / sq['seconds']:,.0f} vs "
                f"{fts['documents'] / fts['seconds']:,.0f} docs/s",
                "status": _mark(eps >= feps),
            }
        )
    search = results.get("search")
    if search:
        o = search["overall"]
        out.append(
            {
                "target": "(b) search p50 <= 5 ms",
                "value": f"{o['sessionq_p50']:.2f} ms",
                "status": _mark(o["sessionq_p50"] <= TARGET_P50_MS),
            }
        )
        out.append(
            {
                "target": "(b) search p99 <= 30 ms",
                "value": f"{o['sessionq_p99']:.2f} ms",
                "status": _mark(o["sessionq_p99"] <= TARGET_P99_MS),
            }
        )
        ratio = o["fts5_p99"] / o["sessionq_p99"]
        out.append(
            {
                "target": "(b) search p99 >= 5x faster than FTS5",
                "value": f"x{ratio:.1f} ({o['fts5_p99']:.1f} ms vs {o['sessionq_p99']:.2f} ms)",
                "status": _mark(ratio >= TARGET_P99_RATIO),
            }
        )
        words = search.get("words")
        if words:
            today = search.get("before", {}).get("p99", o["sessionq_p99"])
            out.append(
                {
                    "target": "(b) words-mode search p99 <= 2x the phrase p99 of 970ce9a "
                    "(or of this tree without --baseline-src)",
                    "value": f"p50 {words['p50']:.2f} / p99 {words['p99']:.2f} ms vs p99 "
                    f"{today:.2f} ms (x{words['p99'] / today:.2f})",
                    "status": _mark(words["p99"] <= 2 * today),
                }
            )
    return out


# ---- main ---------------------------------------------------------------------------------------
def _generate(kind: str, corpus: Path, size: int, seed: int) -> None:
    flag = "--events" if kind == "mix" else "--sessions"
    cmd = [
        sys.executable,
        str(ROOT / "bench" / "gen_corpus.py"),
        "--kind",
        kind,
        "--out",
        str(corpus),
        flag,
        str(size),
        "--seed",
        str(seed),
    ]
    print(f"$ {' '.join(cmd[1:])}", flush=True)
    subprocess.run(cmd, cwd=ROOT, check=True)


PHASES: Final = (
    "ingest-mix",
    "ingest-search",
    "bare",
    "search",
    "ingest-real",
    "reads",
    "redaction",
)
REAL_CORPUS: Final = ROOT.parent / "shared" / "corpus" / "dsh"


def _reads_phase(args: argparse.Namespace, data_root: Path) -> dict[str, Any]:
    """Exact reads on the (a) data dir, and on the one the baseline code wrote."""
    out: dict[str, Any] = {}
    runs = [("after", data_root / "mix-sessionq", None)]
    if args.baseline_src is not None:
        runs.append(("before", data_root / "mix-sessionq-before", args.baseline_src))
    for label, data, code in runs:
        print(f"exact reads ({label}) ...", flush=True)
        got = _run_child("reads", {"data": str(data), "n": args.read_targets}, code)
        got["summary"] = {
            name: {"p50": _percentile(v, 50), "p99": _percentile(v, 99), "n": len(v)}
            for name, v in got["samples_ms"].items()
        }
        out[label] = got
    return out


def run(args: argparse.Namespace) -> dict[str, Any]:
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    data_root = out / "data"
    data_root.mkdir(exist_ok=True)
    phases = set(args.phases.split(",")) if args.phases else set(PHASES)
    if args.skip_bare:
        phases.discard("bare")
    unknown = phases - set(PHASES)
    if unknown:
        raise SystemExit(f"unknown phases {sorted(unknown)}; choose from {PHASES}")
    previous: dict[str, Any] = {}
    if phases != set(PHASES) and (out / "results.json").exists():
        previous = json.loads((out / "results.json").read_text())
    results: dict[str, Any] = {
        "machine": machine(),
        "code": _code_fingerprint(),
        "scale": args.scale,
        "corpora": {},
        "ingest": {},
        "started": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "phases_run": sorted(phases),
    }
    m = results["machine"]
    print(f"machine: nproc={m['nproc']} ram={m['ram_gib']} GiB", flush=True)
    sizes = {
        "mix": max(1_000, int(MIX_EVENTS * args.scale)),
        "search": max(10, int(SEARCH_SESSIONS * args.scale)),
    }
    manifests: dict[str, dict[str, Any]] = {}
    needs = {
        "mix": {"ingest-mix", "reads", "redaction"},
        "search": {"ingest-search", "bare", "search"},
    }
    for kind in ("mix", "search"):
        corpus = out / f"corpus-{kind}"
        if not needs[kind] & phases and not (corpus / "manifest.json").exists():
            continue
        if not args.skip_gen or not (corpus / "manifest.json").exists():
            t0 = time.perf_counter()
            _generate(kind, corpus, sizes[kind], args.seed)
            print(f"  generated {kind} in {time.perf_counter() - t0:.1f}s", flush=True)
        manifest = json.loads((corpus / "manifest.json").read_text())
        manifests[kind] = manifest
        files = _corpus_files(corpus)
        results["corpora"][kind] = {
            "dir": str(corpus),
            "files": len(files),
            "events": manifest["events"],
            "documents": manifest["documents"],
            "sessions": manifest["sessions"],
            "bytes": _files_bytes(files),
            "generation_seconds": manifest["generation_seconds"],
            "params": manifest["params"],
        }
    if "ingest-real" in phases:
        files = _corpus_files(REAL_CORPUS)
        results["corpora"]["real"] = {
            "dir": str(REAL_CORPUS),
            "files": len(files),
            "bytes": _files_bytes(files),
        }

    for kind in ("mix", "search", "real"):
        if f"ingest-{kind}" not in phases:
            if kind in previous.get("ingest", {}):
                results["ingest"][kind] = {
                    **previous["ingest"][kind],
                    "reused_from": previous["started"],
                    "reused_code": previous.get("code"),
                }
            continue
        corpus = REAL_CORPUS if kind == "real" else out / f"corpus-{kind}"
        results["ingest"][kind] = _ingest_phase(args, kind, corpus, data_root)

    if "redaction" in phases:
        results["redaction"] = _redaction_phase(args, out / "corpus-mix", data_root)
    elif "redaction" in previous:
        results["redaction"] = {**previous["redaction"], "reused_from": previous["started"]}

    if "reads" in phases:
        results["reads"] = _reads_phase(args, data_root)
    elif "reads" in previous:
        results["reads"] = {**previous["reads"], "reused_from": previous["started"]}

    if "bare" in phases:
        print("tantivy bare indexing (search) ...", flush=True)
        bare_dir = data_root / "search-tantivy-bare"
        bare = _run_child(
            "tantivy-bare",
            {
                "corpus": str(out / "corpus-search"),
                "index": str(bare_dir),
                "heap": 128_000_000,
                "threads": 1,
            },
        )
        bare["size_bytes"] = _dir_bytes(bare_dir)
        results["tantivy_bare"] = bare
        shutil.rmtree(bare_dir, ignore_errors=True)
    elif "tantivy_bare" in previous:
        results["tantivy_bare"] = {
            **previous["tantivy_bare"],
            "reused_from": previous["started"],
            "reused_code": previous.get("code"),
        }

    if "search" in phases:
        results["search"] = _search_phase(args, manifests["search"], data_root)
    elif "search" in previous:
        results["search"] = {
            **previous["search"],
            "reused_from": previous["started"],
            "reused_code": previous.get("code"),
        }
    results["targets"] = _targets(results)
    results["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S")
    return results


def _ingest_phase(
    args: argparse.Namespace, kind: str, corpus: Path, data_root: Path
) -> dict[str, Any]:
    """sessionq (and the baseline code) and FTS5 ingesting one corpus, ``--ingest-reps``
    rounds interleaved (odd rounds run FTS5 first), so a machine whose speed drifts (a
    shared VM) slows both alike. The entry's runs are the median ones by wall time;
    ``pairs`` holds each round's sessionq/FTS5 rate ratio."""
    data = data_root / f"{kind}-sessionq"
    db = data_root / f"{kind}-fts5.sqlite3"
    baseline: Path | None = args.baseline_src
    runs: dict[str, list[dict[str, Any]]] = {"sessionq": [], "sessionq_before": [], "fts5": []}

    def run_sessionq() -> None:
        print(f"ingest ({kind}) sessionq ...", flush=True)
        sq = _run_child(
            "ingest-sessionq", {"corpus": str(corpus), "data": str(data), "jobs": args.jobs}
        )
        sq.update(_data_dir_sizes(data))
        print(f"  {sq['events'] / sq['seconds']:,.0f} events/s", flush=True)
        runs["sessionq"].append(sq)
        if baseline is not None:
            before_dir = data_root / f"{kind}-sessionq-before"
            print(f"ingest ({kind}) sessionq before ({baseline}) ...", flush=True)
            old = _run_child(
                "ingest-sessionq", {"corpus": str(corpus), "data": str(before_dir)}, baseline
            )
            old.update(_data_dir_sizes(before_dir))
            print(f"  {old['events'] / old['seconds']:,.0f} events/s", flush=True)
            runs["sessionq_before"].append(old)

    def run_fts5() -> None:
        print(f"ingest ({kind}) FTS5 ...", flush=True)
        fts = _run_child("ingest-fts5", {"corpus": str(corpus), "db": str(db)})
        fts["size_bytes"] = _files_bytes([Path(f"{db}{s}") for s in ("", "-wal", "-shm")])
        print(f"  {fts['events'] / fts['seconds']:,.0f} events/s", flush=True)
        runs["fts5"].append(fts)

    for rnd in range(max(1, args.ingest_reps)):
        for run in (run_sessionq, run_fts5) if rnd % 2 == 0 else (run_fts5, run_sessionq):
            run()
    entry: dict[str, Any] = {name: _median_run(reps) for name, reps in runs.items() if reps}
    entry["pairs"] = [
        {
            "sessionq_seconds": sq["seconds"],
            "fts5_seconds": fts["seconds"],
            "ratio": fts["seconds"] / sq["seconds"],  # same events: the rate ratio
        }
        for sq, fts in zip(runs["sessionq"], runs["fts5"], strict=True)
    ]
    return entry


def _redaction_phase(args: argparse.Namespace, corpus: Path, data_root: Path) -> dict[str, Any]:
    """Ingest of mix (a) with ``--redact-secrets on`` (the default) and ``off``, the same
    code, ``--ingest-reps`` interleaved rounds (odd rounds run ``off`` first); ``ratio``
    is the median of the rounds' on/off wall-time ratios: the cost of redaction. On a
    shared machine a round's wall time moves by more than that cost, so the phase also
    times the detection alone over the corpus's index texts (``child_redaction_cost``):
    ``detection_share`` is its CPU over the median ``off`` ingest's CPU."""
    runs: dict[str, list[dict[str, Any]]] = {"on": [], "off": []}
    for rnd in range(max(1, args.ingest_reps)):
        for mode in ("on", "off") if rnd % 2 == 0 else ("off", "on"):
            print(f"ingest (mix) --redact-secrets {mode} ...", flush=True)
            data = data_root / f"mix-redaction-{mode}"
            r = _run_child(
                "ingest-sessionq",
                {"corpus": str(corpus), "data": str(data), "jobs": args.jobs, "redaction": mode},
            )
            r["loadavg_after"] = _loadavg()
            print(f"  {r['seconds']:.2f} s, {r['events'] / r['seconds']:,.0f} events/s", flush=True)
            runs[mode].append(r)
    pairs = [
        {
            "on_seconds": on["seconds"],
            "off_seconds": off["seconds"],
            "ratio": on["seconds"] / off["seconds"],
        }
        for on, off in zip(runs["on"], runs["off"], strict=True)
    ]
    ratio = float(statistics.median(p["ratio"] for p in pairs))
    cpu = float(
        statistics.median(
            on["cpu_seconds"] / off["cpu_seconds"]
            for on, off in zip(runs["on"], runs["off"], strict=True)
        )
    )
    print(
        f"redaction on/off: wall x{ratio:.3f} (median of {len(pairs)}), CPU x{cpu:.3f}", flush=True
    )
    cost = _run_child("redaction-cost", {"corpus": str(corpus)})
    share = cost["cpu_seconds"] / float(statistics.median(r["cpu_seconds"] for r in runs["off"]))
    print(
        f"detection alone: {cost['cpu_seconds']:.3f} s CPU over {cost['texts']:,} texts "
        f"({cost['chars']:,} characters) = {share:.1%} of the off ingest's CPU",
        flush=True,
    )
    return {
        "detection": cost,
        "detection_share": share,
        "on": _median_run(runs["on"]),
        "off": _median_run(runs["off"]),
        "pairs": pairs,
        "ratio": ratio,
        "cpu_ratio": cpu,
    }


def _median_run(reps: list[dict[str, Any]]) -> dict[str, Any]:
    return sorted(reps, key=lambda r: float(r["seconds"]))[(len(reps) - 1) // 2]


def rate_ratio(ing: dict[str, Any]) -> float:
    """sessionq/FTS5 events/s: the median of the rounds' ratios (one round: its ratio)."""
    pairs = ing.get("pairs")
    if pairs:
        return float(statistics.median(p["ratio"] for p in pairs))
    sq, fts = ing["sessionq"], ing["fts5"]
    return float((sq["events"] / sq["seconds"]) / (fts["events"] / fts["seconds"]))


def _search_phase(
    args: argparse.Namespace, manifest: dict[str, Any], data_root: Path
) -> dict[str, Any]:
    queries = build_queries(manifest)
    common = {"reps": args.reps, "warmup": args.warmup, "budget": args.budget, "queries": queries}
    print(f"search latency: {len(queries)} queries x {args.reps} reps ...", flush=True)
    sq_search = _run_child(
        "search", {**common, "engine": "sessionq", "data": str(data_root / "search-sessionq")}
    )
    fts_search = _run_child(
        "search", {**common, "engine": "fts5", "db": str(data_root / "search-fts5.sqlite3")}
    )
    print("search latency, sessionq --search-mode words ...", flush=True)
    words = _run_child(
        "search",
        {
            **common,
            "engine": "sessionq",
            "mode": "words",
            "data": str(data_root / "search-sessionq"),
        },
    )
    before: dict[str, Any] | None = None
    if args.baseline_src is not None:
        print("search latency, sessionq before ...", flush=True)
        before = _run_child(
            "search",
            {**common, "engine": "sessionq", "data": str(data_root / "search-sessionq-before")},
            args.baseline_src,
        )
    per_query: list[dict[str, Any]] = []
    for q, a, b in zip(queries, sq_search["queries"], fts_search["queries"], strict=True):
        per_query.append(
            {
                **q,
                "matching_docs": a.get("matching_docs"),
                "sessionq_hits": a["hits"],
                "fts5_hits": b["hits"],
                "sessionq_n": len(a["samples_ms"]),
                "fts5_n": len(b["samples_ms"]),
                "sessionq_p50": _percentile(a["samples_ms"], 50),
                "sessionq_p99": _percentile(a["samples_ms"], 99),
                "fts5_p50": _percentile(b["samples_ms"], 50),
                "fts5_p99": _percentile(b["samples_ms"], 99),
                "sessionq_samples_ms": a["samples_ms"],
                "fts5_samples_ms": b["samples_ms"],
            }
        )
    sq_groups = [q["sessionq_samples_ms"] for q in per_query]
    fts_groups = [q["fts5_samples_ms"] for q in per_query]
    word_groups = [q["samples_ms"] for q in words["queries"]]
    extra: dict[str, Any] = {
        "words": {
            "p50": _weighted_percentile(word_groups, 50),
            "p99": _weighted_percentile(word_groups, 99),
            "hits": [q["hits"] for q in words["queries"]],
            "machine_load": words["machine_load"],
        }
    }
    if before is not None:
        groups = [q["samples_ms"] for q in before["queries"]]
        extra["before"] = {
            "p50": _weighted_percentile(groups, 50),
            "p99": _weighted_percentile(groups, 99),
            "machine_load": before["machine_load"],
        }
    return {
        **extra,
        "queries": per_query,
        "overall": {
            "sessionq_p50": _weighted_percentile(sq_groups, 50),
            "sessionq_p99": _weighted_percentile(sq_groups, 99),
            "fts5_p50": _weighted_percentile(fts_groups, 50),
            "fts5_p99": _weighted_percentile(fts_groups, 99),
        },
        "sessionq_peak_rss_kb": sq_search["peak_rss_kb"],
        "fts5_peak_rss_kb": fts_search["peak_rss_kb"],
        "sessionq_machine_load": sq_search["machine_load"],
        "fts5_machine_load": fts_search["machine_load"],
        "reps": args.reps,
        "warmup": args.warmup,
        "budget_seconds_per_query": args.budget,
    }


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["_child"]:
        mode, payload = argv[1], json.loads(argv[2])
        print(json.dumps(CHILDREN[mode](payload)), flush=True)
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scale", type=float, default=1.0, help="fraction of the default sizes")
    ap.add_argument("--skip-gen", action="store_true", help="reuse bench/out corpora")
    ap.add_argument("--skip-bare", action="store_true", help="skip the tantivy-py bare run")
    ap.add_argument(
        "--phases",
        default="",
        help=f"comma-separated subset of {','.join(PHASES)} (default: all); the other "
        "phases' figures are taken over from the previous bench/out/results.json",
    )
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--reps", type=int, default=50, help="timed repetitions per query")
    ap.add_argument("--warmup", type=int, default=3, help="untimed repetitions per query")
    ap.add_argument(
        "--budget",
        type=float,
        default=30.0,
        help="seconds per query after which repetitions stop (at least 5 are kept)",
    )
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument(
        "--baseline-src",
        type=Path,
        default=None,
        help="a checkout of older code (e.g. `git worktree add /tmp/base main`): (a) and the "
        "real corpus are also ingested with its indexer, and the exact reads measured on "
        "both data dirs",
    )
    ap.add_argument(
        "--jobs", type=int, default=0, help="sessionq ingest workers (0: one per core, as the CLI)"
    )
    ap.add_argument(
        "--ingest-reps",
        type=int,
        default=1,
        help="interleaved rounds of each ingest (sessionq, FTS5); the rate ratio is the "
        "rounds' median (for machines whose speed drifts)",
    )
    ap.add_argument("--read-targets", type=int, default=1000, help="exact-read targets")
    ap.add_argument(
        "--quiet-wait",
        type=float,
        default=0.0,
        help="before each measurement wait up to this many seconds for other processes to "
        "use < 0.3 cores (for shared machines; default 0 = do not wait)",
    )
    args = ap.parse_args(argv)
    QUIET["wait"] = args.quiet_wait
    results = run(args)
    text = report(results)
    print("\n".join(text))
    results["report"] = text
    (args.out / "results.json").write_text(json.dumps(results, indent=1, ensure_ascii=False))
    print(f"\nwrote {args.out / 'results.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
