"""Generate large dsh-format session logs from the real logs in ``shared/corpus/dsh``.

Two kinds (see bench/README.md):

* ``mix``    -- whole copies of every real log the reader accepts, in their original line
  layout (packed chunk rows stay packed), so the event mix is the real one (mostly
  ``assistant/chunk``). ``--events N`` (default 2,000,000) total events.
* ``search`` -- ``--sessions N`` (default 10,000) sessions of ~100 semantic documents:
  every ``assistant/chunk`` is dropped (seqs renumbered, ``surfaceOp`` replace bounds and
  ``sourceEventSeqs`` remapped, emptied source lists removed), and several chunk-free real
  logs are concatenated into one session until it holds its target document count.

Every copy gets fresh ids (uuid5 of the original id and a copy key, so references inside a
copy -- parent sessions, call ids, message ids -- stay consistent), a workspace ``cwd``
drawn from 100 Zipf-weighted workspaces, shifted and compacted ``createdAt``/``time``
values spread over one year, and extra words appended to its text blocks: words drawn from
a Zipf-distributed vocabulary of English words and code identifiers (both harvested from
the Python standard library sources, ranked by their frequency there) and generated
Chinese words; about 1% of the text-bearing events also get a unique token (``zq`` + 10
hex digits) so that single-document terms exist. A sample of the written files is read
back with ``indexer.logs.reader.read_log``; any invalid file aborts the run.

Usage: ``python bench/gen_corpus.py --kind mix|search --out DIR [--events N | --sessions N]
[--seed S] [--jobs J]``. Writes ``DIR/*.jsonl`` and ``DIR/manifest.json``.
"""

from __future__ import annotations

import argparse
import collections
import itertools
import json
import math
import multiprocessing
import os
import random
import re
import sys
import sysconfig
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import orjson

from indexer.logs.chunks import expand_chunk_row, is_chunk_row
from indexer.logs.jsonl import iter_lines
from indexer.logs.reader import LogRejectedError, read_log
from indexer.surface.text import extract_text

CORPUS_DIR: Final = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "dsh"

DEFAULT_MIX_EVENTS: Final = 2_000_000
DEFAULT_SEARCH_SESSIONS: Final = 10_000

DAY_MS: Final = 86_400_000
YEAR_MS: Final = 365 * DAY_MS
T_END: Final = 1_780_272_000_000  # 2026-06-01T00:00:00Z
T_START: Final = T_END - YEAR_MS

WORKSPACES: Final = 100
WORKSPACE_ZIPF: Final = 0.8
NO_CWD_SHARE: Final = 0.05
VOCAB_ZIPF: Final = 1.0
WORDS_MU: Final = 2.6  # appended words per text event: lognormal, median e^2.6 = 13.5
WORDS_SIGMA: Final = 0.9
WORDS_MAX: Final = 400
UNIQUE_TOKEN_P: Final = 0.01
MIX_MAX_SPAN_MS: Final = 2 * 3_600_000  # a copied session lasts at most 2 h
SEARCH_MEMBER_SPAN_MS: Final = 20 * 60_000  # each concatenated member at most 20 min
SEARCH_DOCS_MIN: Final = 45
SEARCH_DOCS_MAX: Final = 150
VALIDATE_EVERY: Final = 40

ID_KEYS: Final = frozenset(
    {
        "id",
        "callId",
        "toolCallId",
        "childId",
        "senderSessionId",
        "parentCallId",
        "rootCallId",
        "subCallId",
        "compactionId",
        "retryId",
        "runId",
        "goalId",
        "commandId",
    }
)
NS: Final = uuid.UUID("5e551011-0000-4000-8000-00000000b3c4")

# The most frequent Chinese characters (approximate frequency order), for generated words.
ZH_CHARS: Final = (
    "的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年得就那要下以生会自着去之"
    "过家学对可她里后小么心多天而能好都然没日于起还发成事只作当想看文无开手十用主行方又如前"
    "所本见经头面公同三已老从动两长知民样现分将外但身些与高意进把法此实回二理美点月明其种声"
    "全工己话儿者向情部正名定女问力机给等几很业最间新什打便位因重被走电四第门相次东政海口使"
    "教西再平真听世气信北少关并内加化由却代军产入先山五太水万市眼体别处总才场师书比住员九笑"
    "性通目华报立马命张活难神数件安表原车白应路期叫死常提感金何更反合放做系计或司利受光王果"
    "亲界及今京务制解各任至清物台象记边共风战干接它许八特觉望直服毛林题建南度统色字请交爱让"
    "认算论百吃义科怎元社术结六功指思非流每青管夫连远资队跟带花快条院变联言权往展该领传近留"
    "红治决周保达办运武半候七必城父强步完革深区即求品士转量空甚众技轻程告江语英基派满式李息"
    "写呢识极令黄德收脸钱党倒未持取设始版双历越史商千片容研像找友孩站广改议形委早房音火际则"
    "首单据导影失拿网香似斯专石若兵弟谁校读志飞观争究包组造落视济喜离虽坐集编宝谈府拉黑且随"
    "格尽剑讲布杀微怕母调局根曾准团段终乐切级克精哪官示冷域"
)


# ---- vocabulary ---------------------------------------------------------------------------------
@dataclass(slots=True)
class Vocabulary:
    """Words in Zipf rank order (rank 1 first) with their class and cumulative weights."""

    words: list[str]
    classes: list[str]  # "en" | "ident" | "zh"
    cum_weights: list[float]
    zh: frozenset[str] = field(default_factory=frozenset)

    def to_json(self) -> dict[str, Any]:
        return {
            "zipf_s": VOCAB_ZIPF,
            "size": len(self.words),
            "words": self.words,
            "classes": self.classes,
        }


_IDENT: Final = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")
_ENGLISH: Final = re.compile(r"[a-z]{2,15}")
_CAMEL: Final = re.compile(r"[a-z][A-Z]")


def _stdlib_tokens() -> collections.Counter[bytes]:
    """Identifier-like tokens of the standard library sources (code, comments, docs)."""
    lib = Path(sysconfig.get_paths()["stdlib"])
    counts: collections.Counter[bytes] = collections.Counter()
    skip = {"test", "tests", "site-packages", "idlelib", "lib2to3", "turtledemo"}
    for path in sorted(lib.rglob("*.py")):
        if skip.intersection(path.relative_to(lib).parts):
            continue
        try:
            counts.update(_IDENT.findall(path.read_bytes()))
        except OSError:
            continue
    return counts


def _chinese_words(rng: random.Random, count: int) -> list[str]:
    """``count`` distinct 2-4 character words; common characters recur (Zipf over chars)."""
    chars = list(dict.fromkeys(ZH_CHARS))
    cum = list(itertools.accumulate(1.0 / (r + 1) ** 0.9 for r in range(len(chars))))
    seen: dict[str, None] = {}
    while len(seen) < count:
        n = rng.choice((2, 2, 2, 3, 3, 4))
        seen.setdefault("".join(rng.choices(chars, cum_weights=cum, k=n)))
    return list(seen)


def _synthetic_identifiers(
    rng: random.Random, words: list[str], taken: set[str], count: int
) -> list[str]:
    """camelCase / snake_case / PascalCase identifiers of 2-3 common English words."""
    out: dict[str, None] = {}
    while len(out) < count:
        parts = rng.sample(words, rng.choice((2, 2, 3)))
        style = rng.random()
        if style < 0.45:
            ident = parts[0] + "".join(p.capitalize() for p in parts[1:])
        elif style < 0.8:
            ident = "_".join(parts)
        else:
            ident = "".join(p.capitalize() for p in parts)
        if rng.random() < 0.1:
            ident += str(rng.randint(0, 99))
        if ident not in taken:
            out.setdefault(ident)
    return list(out)


def build_vocabulary(seed: int) -> Vocabulary:
    rng = random.Random(f"{seed}:vocab")
    counts = _stdlib_tokens()
    english: list[str] = []
    idents: list[str] = []
    for raw, _n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        token = raw.decode("ascii")
        if _ENGLISH.fullmatch(token):
            english.append(token)
        elif 4 <= len(token) <= 40 and (
            ("_" in token.strip("_")) or _CAMEL.search(token) is not None
        ):
            idents.append(token)
    english = english[:40_000]
    idents = idents[:40_000]
    idents += _synthetic_identifiers(rng, english[:3_000], set(idents), 80_000 - len(idents))
    chinese = _chinese_words(rng, 15_000)
    pools: dict[str, Iterator[str]] = {
        "en": iter(english),
        "ident": iter(idents),
        "zh": iter(chinese),
    }
    shares = {"en": 0.5, "ident": 0.35, "zh": 0.15}
    words: list[str] = [next(pools["en"])]  # rank 1 is an English word
    classes: list[str] = ["en"]
    live = dict(shares)
    while live:
        cls = rng.choices(list(live), weights=list(live.values()))[0]
        word = next(pools[cls], None)
        if word is None:
            del live[cls]
            continue
        words.append(word)
        classes.append(cls)
    cum = list(itertools.accumulate(1.0 / (r + 1) ** VOCAB_ZIPF for r in range(len(words))))
    zh = frozenset(w for w, c in zip(words, classes, strict=True) if c == "zh")
    return Vocabulary(words, classes, cum, zh)


class TextDrawer:
    """Appends Zipf-drawn words (and rarely a unique token) to a text."""

    def __init__(self, vocab: Vocabulary, rng: random.Random) -> None:
        self.vocab = vocab
        self.rng = rng
        self.unique_tokens: list[str] = []

    def words(self) -> str:
        rng = self.rng
        n = min(WORDS_MAX, max(1, int(rng.lognormvariate(WORDS_MU, WORDS_SIGMA))))
        drawn = rng.choices(self.vocab.words, cum_weights=self.vocab.cum_weights, k=n)
        zh = self.vocab.zh
        parts: list[str] = []
        prev_zh = False
        for w in drawn:
            is_zh = w in zh
            if is_zh and prev_zh:
                parts[-1] += w  # Chinese is written without spaces
            else:
                parts.append(w)
            prev_zh = is_zh
        if rng.random() < UNIQUE_TOKEN_P:
            token = f"zq{rng.getrandbits(40):010x}"
            parts.append(token)
            if len(self.unique_tokens) < 20:
                self.unique_tokens.append(token)
        return " " + " ".join(parts)


# ---- templates ----------------------------------------------------------------------------------
Path_ = tuple[str | int, ...]


@dataclass(slots=True)
class LineTemplate:
    """One output line: its template JSON and what to rewrite per copy."""

    raw: bytes
    row: bool  # a packed chunk row (time0/dt) rather than one event
    member_times: list[int]  # event time, or the member times of a row
    ids: list[Path_]
    text: Path_ | None
    seq_paths: list[Path_]  # ints shifted by the seq offset (search kind)
    seq_lists: list[Path_]  # int lists shifted by the seq offset (search kind)
    events: int
    docs: int


@dataclass(slots=True)
class LogTemplate:
    name: str
    header: dict[str, Any]
    lines: list[LineTemplate]
    lo: int
    hi: int
    events: int
    docs: int
    depth: int = 0


def _last_text_block(content: Any) -> int | None:
    if not isinstance(content, list):
        return None
    for i in range(len(content) - 1, -1, -1):
        block = content[i]
        if (
            isinstance(block, dict)
            and block.get("type") == "text"
            and isinstance(block.get("text"), str)
        ):
            return i
    return None


def _text_path(etype: str, data: Any) -> Path_ | None:
    """Where appended words go: the last text block of the searchable content.

    For ``tool/result`` only the nested result content (the part a replacement may change,
    SPEC §2.1 step 5) is touched, in both the current and the older message shape.
    """
    if not isinstance(data, dict):
        return None
    base: Path_
    content: Any
    if etype == "user/message":
        base, content = ("data", "content"), data.get("content")
    elif etype == "assistant/message":
        message = data.get("message")
        if "message" in data:
            if not isinstance(message, dict):
                return None
            base, content = ("data", "message", "content"), message.get("content")
        else:
            base, content = ("data", "content"), data.get("content")
    elif etype == "tool/result":
        if "message" in data:
            message = data["message"]
            outer = message.get("content") if isinstance(message, dict) else None
            outer_base: Path_ = ("data", "message", "content")
        else:
            outer = data.get("content")
            outer_base = ("data", "content")
        if not isinstance(outer, list) or not outer:
            return None
        first = outer[0]
        if isinstance(first, dict) and first.get("type") == "tool-result":
            base, content = (*outer_base, 0, "content"), first.get("content")
        elif "message" in data:
            return None
        else:
            base, content = outer_base, outer
    else:
        return None
    i = _last_text_block(content)
    return None if i is None else (*base, i, "text")


def _id_paths(value: Any, path: Path_, out: list[Path_]) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            if isinstance(v, str):
                if k in ID_KEYS:
                    out.append((*path, k))
            elif isinstance(v, dict | list):
                _id_paths(v, (*path, k), out)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            if isinstance(v, dict | list):
                _id_paths(v, (*path, i), out)


def _event_line(
    obj: dict[str, Any], seq_paths: list[Path_], seq_lists: list[Path_]
) -> LineTemplate:
    etype = obj["type"]
    data = obj.get("data")
    ids: list[Path_] = []
    _id_paths(data, ("data",), ids)
    text = _text_path(etype, data)
    doc = 1 if (text is not None or extract_text(etype, data)) else 0
    return LineTemplate(
        raw=orjson.dumps(obj),
        row=False,
        member_times=[int(obj["time"])],
        ids=ids,
        text=text,
        seq_paths=seq_paths,
        seq_lists=seq_lists,
        events=1,
        docs=doc,
    )


def _row_line(obj: dict[str, Any]) -> LineTemplate:
    members = expand_chunk_row(obj)
    ids: list[Path_] = [("data", "id")] if "id" in obj["data"] else []
    return LineTemplate(
        raw=orjson.dumps(obj),
        row=True,
        member_times=[m["time"] for m in members],
        ids=ids,
        text=None,
        seq_paths=[],
        seq_lists=[],
        events=len(members),
        docs=0,
    )


def _valid_logs() -> list[Path]:
    out: list[Path] = []
    for path in sorted(CORPUS_DIR.glob("*.jsonl")):
        try:
            read_log(path)
        except LogRejectedError:
            continue
        out.append(path)
    if not out:
        raise SystemExit(f"no readable logs in {CORPUS_DIR}")
    return out


def _finish(name: str, header: dict[str, Any], lines: list[LineTemplate]) -> LogTemplate:
    times = [t for line in lines for t in line.member_times]
    lo, hi = (min(times), max(times)) if times else (0, 0)
    return LogTemplate(
        name=name,
        header=header,
        lines=lines,
        lo=lo,
        hi=hi,
        events=sum(line.events for line in lines),
        docs=sum(line.docs for line in lines),
    )


def _set_depths(templates: list[LogTemplate]) -> None:
    by_id = {t.header["id"]: t for t in templates}

    def depth(t: LogTemplate, seen: frozenset[str]) -> int:
        parent = by_id.get(t.header.get("parentSession", ""))
        if parent is None or parent.header["id"] in seen:
            return 0
        return 1 + depth(parent, seen | {t.header["id"]})

    for t in templates:
        t.depth = depth(t, frozenset())


def mix_templates() -> list[LogTemplate]:
    """Every readable real log, line by line (packed rows kept), parents before children."""
    templates: list[LogTemplate] = []
    for path in _valid_logs():
        header: dict[str, Any] | None = None
        lines: list[LineTemplate] = []
        for _no, line in iter_lines(path):
            obj = orjson.loads(line)
            if header is None:
                header = obj
            elif is_chunk_row(obj):
                lines.append(_row_line(obj))
            else:
                lines.append(_event_line(obj, [], []))
        assert header is not None
        templates.append(_finish(path.name, header, lines))
    _set_depths(templates)
    templates.sort(key=lambda t: (t.depth, t.name))
    return templates


def search_templates() -> list[LogTemplate]:
    """Every readable real log without its ``assistant/chunk`` events, seqs from 0.

    Remapping: ``surfaceOp`` replace bounds are surface nodes (never chunks) and map
    one-to-one; ``sourceEventSeqs`` keep their non-chunk entries, and a list that became
    empty is removed (an ``assistant/message`` append that cited only chunks then carries
    no sources; an originally empty list stays). ``session/title`` ``messageSeqs`` follow.
    """
    templates: list[LogTemplate] = []
    for path in _valid_logs():
        log = read_log(path)
        header = {"type": "session", **log.header.to_json()}
        keep = [e for e in log.events if e.type != "assistant/chunk"]
        renumber = {e.seq: i for i, e in enumerate(keep)}
        lines: list[LineTemplate] = []
        for i, event in enumerate(keep):
            obj: dict[str, Any] = orjson.loads(event.raw)
            obj["seq"] = i
            seq_paths: list[Path_] = [("seq",)]
            seq_lists: list[Path_] = []
            op = obj.get("surfaceOp")
            if isinstance(op, dict):
                op["start"] = renumber[op["start"]]
                op["end"] = renumber[op["end"]]
                seq_paths += [("surfaceOp", "start"), ("surfaceOp", "end")]
            if "sourceEventSeqs" in obj:
                sources = obj["sourceEventSeqs"]
                mapped = [renumber[s] for s in sources if s in renumber]
                if mapped:
                    obj["sourceEventSeqs"] = mapped
                    seq_lists.append(("sourceEventSeqs",))
                elif sources:
                    del obj["sourceEventSeqs"]
            data = obj.get("data")
            if event.type == "session/title" and isinstance(data, dict):
                seqs = data.get("messageSeqs")
                if isinstance(seqs, list) and all(isinstance(s, int) for s in seqs):
                    data["messageSeqs"] = [renumber[s] for s in seqs if s in renumber]
                    seq_lists.append(("data", "messageSeqs"))
            lines.append(_event_line(obj, seq_paths, seq_lists))
        templates.append(_finish(path.name, header, lines))
    _set_depths(templates)
    return templates


# ---- rendering ----------------------------------------------------------------------------------
def _container(obj: Any, path: Path_) -> tuple[Any, str | int]:
    for key in path[:-1]:
        obj = obj[key]
    return obj, path[-1]


class Renderer:
    """Renders template lines for one log instance."""

    def __init__(
        self,
        id_key: str,
        drawer: TextDrawer,
        *,
        base: int,
        lo: int,
        scale: float,
        seq_offset: int = 0,
        id_cache: dict[str, str] | None = None,
    ) -> None:
        self.id_key = id_key
        self.drawer = drawer
        self.base = base
        self.lo = lo
        self.scale = scale
        self.seq_offset = seq_offset
        self.ids = id_cache if id_cache is not None else {}

    def new_id(self, old: str) -> str:
        new = self.ids.get(old)
        if new is None:
            new = str(uuid.uuid5(NS, f"{self.id_key}\x00{old}"))
            self.ids[old] = new
        return new

    def time(self, t: int) -> int:
        return self.base + int((t - self.lo) * self.scale)

    def line(self, tpl: LineTemplate) -> bytes:
        obj = orjson.loads(tpl.raw)
        if tpl.row:
            times = [self.time(t) for t in tpl.member_times]
            obj["time0"] = times[0]
            if self.scale != 1.0:
                obj["data"]["dt"] = [b - a for a, b in itertools.pairwise(times)]
        else:
            obj["time"] = self.time(tpl.member_times[0])
        for path in tpl.ids:
            c, k = _container(obj, path)
            c[k] = self.new_id(c[k])
        if tpl.text is not None:
            c, k = _container(obj, tpl.text)
            c[k] = c[k] + self.drawer.words()
        if self.seq_offset:
            off = self.seq_offset
            for path in tpl.seq_paths:
                c, k = _container(obj, path)
                c[k] += off
            for path in tpl.seq_lists:
                c, k = _container(obj, path)
                c[k] = [s + off for s in c[k]]
        return orjson.dumps(obj)


def _scale(lo: int, hi: int, max_span: int) -> float:
    return 1.0 if hi - lo <= max_span else max_span / (hi - lo)


def _workspace_picker(rng: random.Random) -> tuple[list[str], list[float]]:
    names = [f"/home/dev/ws{i:03d}" for i in range(WORKSPACES)]
    cum = list(itertools.accumulate(1.0 / (r + 1) ** WORKSPACE_ZIPF for r in range(WORKSPACES)))
    return names, cum


@dataclass(slots=True)
class TaskResult:
    files: int = 0
    sessions: int = 0
    events: int = 0
    docs: int = 0
    validated: int = 0
    cwds: collections.Counter[str] = field(default_factory=collections.Counter)
    tmin: int = 2**62
    tmax: int = -(2**62)
    unique_tokens: list[str] = field(default_factory=list)

    def add(self, other: TaskResult) -> None:
        self.files += other.files
        self.sessions += other.sessions
        self.events += other.events
        self.docs += other.docs
        self.validated += other.validated
        self.cwds.update(other.cwds)
        self.tmin = min(self.tmin, other.tmin)
        self.tmax = max(self.tmax, other.tmax)
        self.unique_tokens.extend(other.unique_tokens[:5])


# Worker globals (set by the pool initializer; fork start method shares them).
_TEMPLATES: list[LogTemplate] = []
_VOCAB: Vocabulary | None = None


def _init_worker(templates: list[LogTemplate], vocab: Vocabulary) -> None:
    global _TEMPLATES, _VOCAB
    _TEMPLATES = templates
    _VOCAB = vocab


def _write_and_check(
    path: Path, lines: list[bytes], validate: bool, expect_events: int, result: TaskResult
) -> None:
    path.write_bytes(b"\n".join(lines) + b"\n")
    result.files += 1
    if validate:
        try:
            log = read_log(path)
        except LogRejectedError as exc:
            raise RuntimeError(f"generated log is invalid: {exc}") from exc
        if len(log.events) != expect_events:
            raise RuntimeError(f"{path}: {len(log.events)} events, expected {expect_events}")
        result.validated += 1


def _header_line(
    template_header: dict[str, Any],
    session_id: str,
    created_at: int,
    cwd: str | None,
    parent: str | None,
    *,
    drop_seed_length: bool = False,
) -> bytes:
    header = dict(template_header)
    header["id"] = session_id
    header["createdAt"] = created_at
    if cwd is None:
        header.pop("cwd", None)
    else:
        header["cwd"] = cwd
    if parent is None:
        header.pop("parentSession", None)
    else:
        header["parentSession"] = parent
    if drop_seed_length:
        header.pop("seedLength", None)
    return orjson.dumps(header)


def mix_task(args: tuple[str, int, int, int, int]) -> TaskResult:
    """One copy of the corpus (the last one possibly partial: ``limit`` events)."""
    out, seed, copy, copies, limit = args
    assert _VOCAB is not None
    rng = random.Random(f"{seed}:mix:{copy}")
    drawer = TextDrawer(_VOCAB, rng)
    names, ws_cum = _workspace_picker(rng)
    window = YEAR_MS // copies
    copy_base = T_START + copy * window
    key = f"mix:{seed}:{copy}"
    ids: dict[str, str] = {}
    cwd_map: dict[str, str] = {}
    bases: dict[str, int] = {}
    result = TaskResult()
    written = 0
    for n, tpl in enumerate(_TEMPLATES):
        if written >= limit:
            break
        old_id = tpl.header["id"]
        old_parent = tpl.header.get("parentSession")
        renderer = Renderer(key, drawer, base=0, lo=tpl.lo, scale=1.0, id_cache=ids)
        sid = renderer.new_id(old_id)
        parent = renderer.new_id(old_parent) if isinstance(old_parent, str) else None
        if isinstance(old_parent, str) and old_parent in bases:
            base = bases[old_parent] + rng.randint(1_000, 600_000)
        else:
            base = copy_base + rng.randint(0, window)
        bases[old_id] = base
        old_cwd = tpl.header.get("cwd")
        cwd: str | None = None
        if isinstance(old_cwd, str):
            if old_cwd not in cwd_map:
                cwd_map[old_cwd] = rng.choices(names, cum_weights=ws_cum)[0]
            cwd = cwd_map[old_cwd]
        renderer.base = base
        renderer.scale = _scale(tpl.lo, tpl.hi, MIX_MAX_SPAN_MS)
        created = base - rng.randint(0, 5_000)
        lines = [_header_line(tpl.header, sid, created, cwd, parent)]
        lines += [renderer.line(line) for line in tpl.lines]
        validate = (copy * len(_TEMPLATES) + n) % VALIDATE_EVERY == 0
        _write_and_check(Path(out) / f"{sid}.jsonl", lines, validate, tpl.events, result)
        result.sessions += 1
        result.events += tpl.events
        result.docs += tpl.docs
        written += tpl.events
        result.cwds[cwd or "<none>"] += 1
        result.tmin = min(result.tmin, created, renderer.time(tpl.lo))
        result.tmax = max(result.tmax, renderer.time(tpl.hi))
    result.unique_tokens = drawer.unique_tokens
    return result


def search_task(args: tuple[str, int, int, int, int]) -> TaskResult:
    """Sessions ``first .. first+count-1`` of ``total``: concatenated chunk-free logs."""
    out, seed, first, count, total = args
    assert _VOCAB is not None
    rng = random.Random(f"{seed}:search:{first}")
    drawer = TextDrawer(_VOCAB, rng)
    names, ws_cum = _workspace_picker(rng)
    members_pool = [t for t in _TEMPLATES if t.events > 0]
    recent: list[tuple[str, str | None, int]] = []  # (id, cwd, base) of root sessions
    result = TaskResult()
    for i in range(first, first + count):
        target = rng.randint(SEARCH_DOCS_MIN, SEARCH_DOCS_MAX)
        members: list[LogTemplate] = []
        docs = 0
        while docs < target:
            t = rng.choice(members_pool)
            members.append(t)
            docs += t.docs
        head = members[0].header
        sid = str(uuid.uuid5(NS, f"search:{seed}:{i}"))
        parent: str | None = None
        base = T_START + int((i + rng.random()) * YEAR_MS / total)
        if "parentSession" in head and recent:
            parent, cwd, parent_base = rng.choice(recent[-50:])
            base = parent_base + rng.randint(1_000, 600_000)
        else:
            cwd = None if rng.random() < NO_CWD_SHARE else rng.choices(names, cum_weights=ws_cum)[0]
            recent.append((sid, cwd, base))
        created = base - rng.randint(0, 5_000)
        lines = [_header_line(head, sid, created, cwd, parent, drop_seed_length=True)]
        offset = 0
        cursor = base
        for j, tpl in enumerate(members):
            scale = _scale(tpl.lo, tpl.hi, SEARCH_MEMBER_SPAN_MS)
            renderer = Renderer(
                f"search:{seed}:{i}:{j}",
                drawer,
                base=cursor,
                lo=tpl.lo,
                scale=scale,
                seq_offset=offset,
            )
            lines += [renderer.line(line) for line in tpl.lines]
            offset += tpl.events
            end = renderer.time(tpl.hi)
            result.tmax = max(result.tmax, end)
            cursor = end + rng.randint(30_000, 600_000)
        result.tmin = min(result.tmin, created)
        validate = i % VALIDATE_EVERY == 0
        _write_and_check(Path(out) / f"{sid}.jsonl", lines, validate, offset, result)
        result.sessions += 1
        result.events += offset
        result.docs += docs
        result.cwds[cwd or "<none>"] += 1
    result.unique_tokens = drawer.unique_tokens
    return result


# ---- main ---------------------------------------------------------------------------------------
def _check_search_sample(files: Sequence[Path]) -> None:
    """The search kind must hold no assistant/chunk event and give each event its text."""
    for path in files:
        log = read_log(path)
        if any(e.type == "assistant/chunk" for e in log.events):
            raise RuntimeError(f"{path}: search corpus holds assistant/chunk events")


def generate(
    kind: str, out: Path, *, events: int, sessions: int, seed: int, jobs: int
) -> dict[str, Any]:
    started = time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*.jsonl"):
        old.unlink()
    (out / "manifest.json").unlink(missing_ok=True)
    vocab = build_vocabulary(seed)
    templates = mix_templates() if kind == "mix" else search_templates()
    tasks: list[tuple[str, int, int, int, int]]
    if kind == "mix":
        per_copy = sum(t.events for t in templates)
        copies = max(1, math.ceil(events / per_copy))
        tasks = [
            (str(out), seed, c, copies, min(per_copy, events - c * per_copy)) for c in range(copies)
        ]
        fn = mix_task
    else:
        block = 100
        tasks = [
            (str(out), seed, first, min(block, sessions - first), sessions)
            for first in range(0, sessions, block)
        ]
        fn = search_task
    total = TaskResult()
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(jobs, initializer=_init_worker, initargs=(templates, vocab)) as pool:
        for res in pool.imap_unordered(fn, tasks):
            total.add(res)
    if kind == "search":
        _check_search_sample(sorted(out.glob("*.jsonl"))[:: max(1, total.files // 20)])
    elapsed = time.perf_counter() - started
    manifest: dict[str, Any] = {
        "kind": kind,
        "seed": seed,
        "source": str(CORPUS_DIR),
        "source_logs": len(templates),
        "files": total.files,
        "sessions": total.sessions,
        "events": total.events,
        "documents": total.docs,
        "validated_files": total.validated,
        "generation_seconds": round(elapsed, 1),
        "time_range": [total.tmin, total.tmax],
        "t_end": T_END,
        "workspaces": dict(total.cwds.most_common()),
        "unique_tokens": total.unique_tokens[:20],
        "params": {
            "requested_events": events if kind == "mix" else None,
            "requested_sessions": sessions if kind == "search" else None,
            "workspaces": WORKSPACES,
            "workspace_zipf_s": WORKSPACE_ZIPF,
            "no_cwd_share": NO_CWD_SHARE if kind == "search" else "as in the source logs",
            "vocab_zipf_s": VOCAB_ZIPF,
            "words_per_text_event": (
                f"lognormal(mu={WORDS_MU}, sigma={WORDS_SIGMA}), 1..{WORDS_MAX}"
            ),
            "unique_token_share": UNIQUE_TOKEN_P,
            "time_span": [T_START, T_END],
            "max_session_span_ms": MIX_MAX_SPAN_MS if kind == "mix" else None,
            "member_span_ms": SEARCH_MEMBER_SPAN_MS if kind == "search" else None,
            "docs_per_session_target": [SEARCH_DOCS_MIN, SEARCH_DOCS_MAX]
            if kind == "search"
            else None,
        },
        "vocabulary": vocab.to_json(),
    }
    (out / "manifest.json").write_text(json.dumps(manifest, ensure_ascii=False))
    return manifest


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kind", choices=("mix", "search"), required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--events", type=int, default=DEFAULT_MIX_EVENTS, help="mix: total events")
    ap.add_argument(
        "--sessions", type=int, default=DEFAULT_SEARCH_SESSIONS, help="search: sessions"
    )
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = ap.parse_args(argv)
    m = generate(
        args.kind,
        args.out,
        events=args.events,
        sessions=args.sessions,
        seed=args.seed,
        jobs=args.jobs,
    )
    summary = {k: m[k] for k in ("kind", "files", "sessions", "events", "documents")}
    summary["validated_files"] = m["validated_files"]
    summary["seconds"] = m["generation_seconds"]
    summary["vocabulary"] = m["vocabulary"]["size"]
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
