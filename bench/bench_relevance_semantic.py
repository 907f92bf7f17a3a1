"""Would a semantic half pay? A static embedding model fused with the lexical ranking,
measured offline on the retrieval set (issue 35), with no product change.

The model: WordLlama ``l2_supercat`` (256 dimensions, 16 MB), the one embedding model
found that ships inside a package the registries serve and runs without a deep-learning
runtime (numpy, tokenizers). Not a dependency of sessionq: install it beside the
benchmark (``pip install wordllama``; its loader is pointed at the weights inside its
wheel, so nothing is fetched from a model hub).

1. every session of ``../shared/relevance/claude`` is cut into chunks of at most 200
   words per message and tool text (14,093 chunks) and embedded, timed;
2. per query, the semantic ranking is the workspace's sessions (the pooled corpus: all
   sessions) by their best chunk's cosine to the query, the caller left out;
3. the lexical ranking is this tree's, as ``bench_relevance.py`` wrote it
   (``bench/out/relevance.json``, mode ``words``; run that first, with ``--holdout-only``
   for the held-out set);
4. printed: hit@1 and MRR@10 of lexical, semantic, and their reciprocal-rank fusion for a
   few constants ``k`` and semantic weights ``w``.

Run: ``python bench/bench_relevance_semantic.py [bench/out/relevance.json]``.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

ROOT: Final = Path(__file__).resolve().parents[1]
CORPUS: Final = ROOT.parent / "shared" / "relevance" / "claude"
QUERIES: Final = ROOT / "bench" / "relevance" / "queries.json"
CHUNK_WORDS: Final = 200


def _texts(record: dict[str, Any]) -> Iterator[str]:
    content = (record.get("message") or {}).get("content")
    if isinstance(content, str):
        yield content
        return
    for block in content or []:
        if block.get("type") == "text":
            yield block.get("text", "")
        elif block.get("type") == "tool_result" and isinstance(block.get("content"), str):
            yield block["content"]
        elif block.get("type") == "tool_use":
            yield json.dumps(block.get("input"))


def _sessions() -> dict[str, tuple[str, list[str]]]:
    """Session id -> (cwd, chunks)."""
    out: dict[str, tuple[str, list[str]]] = {}
    for log in sorted((CORPUS / "projects").rglob("*.jsonl")):
        cwd, chunks = "", []
        for line in log.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            cwd = record.get("cwd", cwd)
            for text in _texts(record):
                words = text.split()
                chunks += [
                    " ".join(words[i : i + CHUNK_WORDS]) for i in range(0, len(words), CHUNK_WORDS)
                ]
        out[log.stem] = (cwd, chunks)
    return out


def _metrics(rankings: dict[str, list[str]], queries: list[dict[str, Any]]) -> str:
    hit1 = mrr = 0.0
    for q in queries:
        ranked, relevant = rankings[q["id"]], set(q["relevant"])
        hit1 += bool(ranked) and ranked[0] in relevant
        mrr += next((1 / (i + 1) for i, s in enumerate(ranked[:10]) if s in relevant), 0.0)
    return f"hit@1 {hit1 / len(queries):.1%}, MRR@10 {mrr / len(queries):.3f}"


def main() -> None:
    import wordllama  # type: ignore[import-not-found]
    from wordllama import WordLlama

    lexical_file = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "bench/out/relevance.json"
    model = WordLlama.load(cache_dir=Path(wordllama.__file__).parent, disable_download=True)
    manifest = json.loads((CORPUS / "manifest.json").read_text())
    callers = {m["id"] for m in manifest if m.get("caller")}
    sessions = _sessions()
    flat = [(sid, chunk) for sid, (_, chunks) in sessions.items() for chunk in chunks]
    started = time.perf_counter()
    vectors = model.embed([chunk for _, chunk in flat], norm=True)
    spent = time.perf_counter() - started
    print(f"{len(flat)} chunks embedded in {spent:.1f} s ({len(flat) / spent:,.0f} chunks/s)")
    rows: dict[str, list[int]] = {}
    for i, (sid, _) in enumerate(flat):
        rows.setdefault(sid, []).append(i)
    queries = json.loads(QUERIES.read_text())
    for corpus, modes in json.loads(lexical_file.read_text()).items():
        lexical = {r["id"]: r["ranked"] for r in modes["this tree: words"]}
        asked = [q for q in queries if q["id"] in lexical]
        semantic: dict[str, list[str]] = {}
        for q in asked:
            vector = model.embed([q["query"]], norm=True)[0]
            scores = {
                sid: float((vectors[rows[sid]] @ vector).max())
                for sid, (cwd, _) in sessions.items()
                if sid not in callers
                and sid in rows
                and ("pooled" in corpus or cwd == q["workspace"])
            }
            semantic[q["id"]] = sorted(scores, key=lambda s: -scores[s])
        print(f"{corpus}, {len(asked)} queries")
        print(f"  lexical (words): {_metrics(lexical, asked)}")
        print(f"  semantic alone:  {_metrics(semantic, asked)}")
        for k in (10, 30, 60):
            for weight in (0.3, 0.5, 1.0):
                fused: dict[str, list[str]] = {}
                for q in asked:
                    score: dict[str, float] = {}
                    for i, sid in enumerate(lexical[q["id"]]):
                        score[sid] = score.get(sid, 0.0) + 1 / (k + i + 1)
                    for i, sid in enumerate(semantic[q["id"]][:50]):
                        score[sid] = score.get(sid, 0.0) + weight / (k + i + 1)
                    fused[q["id"]] = sorted(score, key=lambda s: -score[s])
                print(f"  fused, k {k}, w {weight}: {_metrics(fused, asked)}")


if __name__ == "__main__":
    main()
