"""The Tantivy index: analyzer, literal phrases, filters, grouped ranking, writes, readers."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Final

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from indexer.model.search import (
    AvailabilityFilter,
    CreatedAtFilter,
    CwdFilter,
    EventHit,
    EventMetadataFilter,
    IdFilter,
    ParentFilter,
    SeqFilter,
    SessionFilter,
    Surface,
    SurfaceFilter,
    TimeFilter,
    TypeFilter,
)
from indexer.store.tantivy import (
    IndexDoc,
    TantivyIndex,
    analyze,
    first_occurrence,
    mark_first_occurrence,
)
from indexer.store.tantivy.analyzer import ANALYZER
from indexer.store.tantivy.queries import UNION_TERMS
from indexer.store.tantivy.snippet import MATCH_END, MATCH_START
from tests.indexer.tantivy_helpers import (
    delete_event,
    dump_docs,
    scored_matches,
    session_doc_count,
)

NONE: frozenset[str] = frozenset()


def doc(
    session_id: str,
    seq: int,
    text: str,
    *,
    time: int = 10,
    type: str = "user/message",
    surface: Surface = "current",
    cwd: str | None = None,
    parent: str | None = None,
    created_at: int = 0,
) -> IndexDoc:
    return IndexDoc(session_id, seq, type, time, surface, text, cwd, parent, created_at)


@pytest.fixture
def index(tmp_path: Path) -> Iterator[TantivyIndex]:
    ix = TantivyIndex(tmp_path / "index", writable=True, heap_bytes=20_000_000)
    yield ix
    ix.close()


def put(ix: TantivyIndex, *docs: IndexDoc) -> None:
    ix.upsert(docs)
    ix.commit()


def sessions(
    ix: TantivyIndex,
    query: str,
    session_filters: Sequence[SessionFilter] = (),
    event_filters: Sequence[EventMetadataFilter] = (),
    *,
    live_ids: frozenset[str] = NONE,
    exclude: frozenset[str] = NONE,
    limit: int = 20,
    snippet_chars: int = 240,
) -> list[str]:
    hits, _ = ix.search_sessions(
        query,
        session_filters,
        event_filters,
        live_ids=live_ids,
        exclude_session_ids=exclude,
        limit=limit,
        snippet_chars=snippet_chars,
    )
    return [h.session_id for h in hits]


def events(
    ix: TantivyIndex, session_id: str, query: str, filters: Sequence[EventMetadataFilter] = ()
) -> list[int]:
    hits, _ = ix.search_events(session_id, query, filters, limit=50)
    return [h.seq for h in hits]


# ---- analyzer ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("Hello\n(AI)+ BRAID", ["hello", "ai", "braid"]),
        ("café CAFE naïve Ærø", ["cafe", "cafe", "naive", "aero"]),
        ("snake_case foo-bar a.b/c:d", ["snake", "case", "foo", "bar", "a", "b", "c", "d"]),
        ("😀😀alpha😀beta 😀", ["alpha", "beta"]),
        ("中文搜索引擎", ["中", "文", "搜", "索", "引", "擎"]),
        ("é中x", ["e", "中", "x"]),
        ("abc中文def", ["abc", "中", "文", "def"]),
        ("日本語のテキスト", ["日", "本", "語", "の", "テ", "キ", "ス", "ト"]),
        ("한국어 ok", ["한", "국", "어", "ok"]),
        ("İstanbul STRASSE straße", ["istanbul", "strasse", "strasse"]),
        ("ＡＢＣ123", ["abc123"]),
        ("हिन्दी", ["हिन्दी"]),
        ('say "needle" OR *', ["say", "needle", "or"]),
        ("*", []),
        ('""', []),
        ("\ufffd \u0000", []),
    ],
)
def test_analyzer_tokens(text: str, tokens: list[str]) -> None:
    assert analyze(text) == tokens


# ---- literal phrases (SPEC §7.3) -----------------------------------------------------------------
def test_whole_token_matching_ai_is_not_braid(index: TantivyIndex) -> None:
    put(index, doc("helper", 0, "An AI helper"), doc("braid", 0, "BRAID"))
    assert sessions(index, "AI") == ["helper"]
    assert sessions(index, "ai") == ["helper"]


def test_diacritics_fold_cafe_matches_cafe_with_accent(index: TantivyIndex) -> None:
    put(index, doc("s", 0, "long long long—café,\nnext value"))
    hits, _ = index.search_events("s", "CAFE", [], limit=5, snippet_chars=14)
    assert [h.seq for h in hits] == [0]
    snippet = hits[0].snippet
    assert "café" in snippet and "—" in snippet and "\n" not in snippet
    assert len(snippet) <= 14


def test_cjk_phrase_is_an_exact_substring_match(index: TantivyIndex) -> None:
    put(
        index,
        doc("zh", 0, "我们的中文搜索引擎很快"),
        doc("ja", 0, "日本語のテキストです"),
        doc("ko", 0, "한국어 검색"),
    )
    assert sessions(index, "搜索") == ["zh"]
    assert sessions(index, "搜索引擎") == ["zh"]
    assert sessions(index, "索引") == ["zh"]
    assert sessions(index, "文引") == []
    assert sessions(index, "擎中") == []
    assert sessions(index, "テキスト") == ["ja"]
    assert sessions(index, "のテ") == ["ja"]
    assert sessions(index, "검색") == ["ko"]
    assert sessions(index, "색검") == []


def test_phrase_needs_contiguous_tokens_punctuation_ignored(index: TantivyIndex) -> None:
    put(
        index,
        doc("a", 0, "😀😀 alpha beta BRAID 😀😀"),
        doc("b", 0, "alpha-beta"),
        doc("c", 0, "alpha middle beta"),
        doc("d", 0, "beta alpha"),
    )
    assert sorted(sessions(index, "alpha beta")) == ["a", "b"]
    assert sorted(sessions(index, "alpha")) == ["a", "b", "c", "d"]


def test_one_token_query_and_tokenless_queries(index: TantivyIndex) -> None:
    put(index, doc("s", 0, "needle in a haystack"))
    assert sessions(index, "needle") == ["s"]
    assert sessions(index, "*") == []
    assert sessions(index, '""') == []
    assert index.search_events("s", "*", [], limit=5) == ([], False)


def test_operators_and_quotes_are_data(index: TantivyIndex) -> None:
    put(
        index,
        doc("operator", 0, "the literal needle OR absent words"),
        doc("needle-only", 0, "a needle"),
        doc("absent-only", 0, "absent"),
        doc("quote", 0, 'say "needle" exactly'),
        doc("star", 0, "needle AND absent NEAR(x) ^ : *"),
    )
    assert sessions(index, "needle OR absent") == ["operator"]
    assert sessions(index, 'say "needle"') == ["quote"]
    assert sessions(index, "NEAR(x)") == ["star"]
    assert sessions(index, "needle AND absent") == ["star"]


def test_nul_and_markers_are_stored_as_replacement_characters(index: TantivyIndex) -> None:
    put(index, doc("s", 0, "before\u0000after \ufdd0x\ufdd1 needle"))
    assert sessions(index, "\ufffd") == []
    assert sessions(index, "before after") == ["s"]
    hits, _ = index.search_events("s", "needle", [], limit=5)
    assert hits[0].snippet == "before\ufffdafter \ufffdx\ufffd needle"


# ---- snippets through the index ------------------------------------------------------------------
def test_snippet_window_follows_the_first_phrase_occurrence(index: TantivyIndex) -> None:
    text = (
        "We traced the flaky parser test.\n\nThe needle was a stale cache entry in the tokenizer."
    )
    put(index, doc("s", 0, text), doc("t", 0, "Le café — " + text))
    hits, _ = index.search_events("s", "needle", [], limit=5, snippet_chars=30)
    assert hits[0].snippet == "…test. The needle was a stale…"
    hits, _ = index.search_events("t", "NEEDLE", [], limit=5, snippet_chars=12)
    assert hits[0].snippet == "…The needle…"


def _reference_span(text: str, tokens: list[str]) -> tuple[int, int] | None:
    """The first occurrence straight from the analyzer's tokens of the whole text."""
    toks = ANALYZER.pre_tokenize(text).tokens
    words = [t.text for t in toks]
    n = len(tokens)
    for i in range(len(words) - n + 1):
        if words[i : i + n] == tokens:
            return toks[i].char_offset_from, toks[i + n - 1].char_offset_to
    return None


_ASCII_PIECES: Final = [
    "alpha", "Beta", "GAMMA", "a1", "x_y", "z-z", "needle", "\n", " ", "  ", ".",
]  # fmt: skip
_OTHER_PIECES: Final = [
    "café", "İ", "naïve", "中", "文", "—", "😀", "⺀", "“", "ｘ", "é", "\u212aelvin", "Needleé",
]  # fmt: skip


@pytest.mark.parametrize("seed", range(8))
def test_first_occurrence_agrees_with_the_analyzer(seed: int) -> None:
    """The ASCII shortcut, the dirty runs (seeds 4-7: non-ASCII pieces are rare, so an
    ASCII phrase is settled beside them) and the windows are all exact."""
    rng = random.Random(seed)
    pieces = _ASCII_PIECES + _OTHER_PIECES if seed < 4 else _ASCII_PIECES * 12 + _OTHER_PIECES
    for _ in range(400):
        k = rng.randrange(1, 40 if seed % 4 < 3 else 2_000)
        text = "".join(rng.choice(pieces) + rng.choice(["", " ", " ", "-"]) for _ in range(k))
        query = " ".join(rng.choice(pieces) for _ in range(rng.randrange(1, 4)))
        tokens = analyze(query)
        if tokens:
            assert first_occurrence(text, tokens) == _reference_span(text, tokens), (text, query)


def test_first_occurrence_beyond_and_across_the_first_chunk() -> None:
    filler = "mot café " * 600  # ≈5,400 code points, non-ASCII
    text = filler + "needle thread"
    span = first_occurrence(text, ["needle", "thread"])
    assert span == (len(filler), len(text))
    # A phrase straddling the 4,096-code-point prefix boundary.
    pad = "é" * 4_090 + " "
    text = pad + "needle thread"
    assert first_occurrence(text, ["needle", "thread"]) == (len(pad), len(text))
    # An ASCII occurrence before, against and after a non-ASCII token character.
    assert first_occurrence("needle 中 x", ["needle"]) == (0, 6)
    assert first_occurrence("needle中", ["needle"]) == (0, 6)
    assert first_occurrence("needleé needle", ["needle"]) == (8, 14)
    assert first_occurrence("a needle 中 thread needle thread", ["needle", "thread"]) == (18, 31)
    assert first_occurrence("中 needle — thread", ["needle", "thread"]) == (2, 17)
    marked = mark_first_occurrence("x needle y needle", ["needle"])
    assert marked == "x " + MATCH_START + "needle" + MATCH_END + " y needle"
    assert first_occurrence("no match here", ["needle"]) is None


@pytest.mark.parametrize(
    ("text", "tokens", "span"),
    [
        ("a needle 中 thread, needle thread", ["needle", "thread"], (19, 32)),  # a run between
        ("needleé x needle", ["needle"], (10, 16)),  # a run around an ASCII candidate
        ("\u212aneedle needle", ["needle"], (8, 14)),  # Kelvin sign: lower-cases to ASCII
        ("naïve x naive", ["naive"], (0, 5)),  # a dirty run holding the token: the analyzer
        ("中needle", ["needle"], (1, 7)),  # CJK beside: its own token
        ("é " * 600 + "needle", ["needle"], (1200, 1206)),  # dense: the analyzer
        ("é x é y", ["needle"], None),
        ("é needlé", ["needle"], (2, 8)),  # no ASCII candidate, a run holding the token
    ],
)
def test_first_occurrence_beside_dirty_runs(
    text: str, tokens: list[str], span: tuple[int, int] | None
) -> None:
    assert first_occurrence(text, tokens) == span == _reference_span(text, tokens)


# ---- filters (SPEC §6, §7.6) ---------------------------------------------------------------------
@pytest.fixture
def two_sessions(index: TantivyIndex) -> TantivyIndex:
    put(
        index,
        doc("a", 0, "needle", cwd="/a", parent="p", created_at=10, time=-124, surface="shadowed"),
        doc("a", 1, "needle", cwd="/a", parent="p", created_at=10, time=-123, type="tool/call"),
        doc("a", 2, "needle", cwd="/a", parent="p", created_at=10, time=12, surface="log-only"),
        doc("b", 0, "needle", cwd=None, parent=None, created_at=20, time=30),
    )
    return index


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        ([], ["a", "b"]),
        ([IdFilter(("a", "x"))], ["a"]),
        ([IdFilter(())], []),
        ([CwdFilter(("/a", None))], ["a", "b"]),
        ([CwdFilter((None,))], ["b"]),
        ([CwdFilter(("/b",))], []),
        ([CwdFilter(())], []),
        ([ParentFilter(("p",))], ["a"]),
        ([ParentFilter((None,))], ["b"]),
        ([ParentFilter(())], []),
        ([CreatedAtFilter(5, 15)], ["a"]),
        ([CreatedAtFilter(10, 10)], ["a"]),
        ([CreatedAtFilter(10.5, None)], ["b"]),
        ([CreatedAtFilter(None, 9.99)], []),
        ([CreatedAtFilter(10.2, 10.8)], []),
        ([CreatedAtFilter(None, None)], ["a", "b"]),
        ([CreatedAtFilter(-1e300, 1e300)], ["a", "b"]),
        ([CreatedAtFilter(1e300, None)], []),
        ([AvailabilityFilter(("persisted",))], ["a", "b"]),
        ([AvailabilityFilter(("live", "persisted"))], ["a", "b"]),
        ([AvailabilityFilter(("live",))], ["b"]),
        ([AvailabilityFilter(("live", "live"))], ["b"]),
        ([AvailabilityFilter(())], []),
        (
            [
                IdFilter(("a", "x")),
                CwdFilter(("/a", None)),
                CreatedAtFilter(5, 15),
                ParentFilter(("p", None)),
                AvailabilityFilter(("persisted",)),
            ],
            ["a"],
        ),
    ],
)
def test_session_filters(
    two_sessions: TantivyIndex, filters: list[SessionFilter], expected: list[str]
) -> None:
    got = sessions(two_sessions, "needle", filters, live_ids=frozenset({"b"}))
    assert sorted(got) == expected


@pytest.mark.parametrize("size", [1, 2, UNION_TERMS, UNION_TERMS + 1, 30])
def test_value_sets_of_every_size_filter_exactly(index: TantivyIndex, size: int) -> None:
    """A filter of one value, a union of a few and a term set of many keep exactly the
    sessions they name; the same sets excluded leave exactly the others."""
    ids = [f"s{i:02d}" for i in range(30)]
    put(index, *(doc(sid, 0, "needle " * (1 + i % 3), cwd="/w") for i, sid in enumerate(ids)))
    rng = random.Random(size)
    chosen = sorted(rng.sample(ids, size))
    got = sessions(index, "needle", [IdFilter(tuple(chosen)), CwdFilter(("/w",))], limit=40)
    assert sorted(got) == chosen
    rest = sessions(index, "needle", [CwdFilter(("/w",))], exclude=frozenset(chosen), limit=40)
    assert sorted(rest) == sorted(set(ids) - set(chosen))


def test_live_only_availability_without_live_sessions_matches_nothing(
    two_sessions: TantivyIndex,
) -> None:
    assert sessions(two_sessions, "needle", [AvailabilityFilter(("live",))]) == []


def test_excluded_sessions_never_appear(two_sessions: TantivyIndex) -> None:
    assert sessions(two_sessions, "needle", exclude=frozenset({"a"})) == ["b"]
    assert sessions(two_sessions, "needle", exclude=frozenset({"a", "b"})) == []


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        ([], [0, 1, 2]),
        ([SeqFilter(1, 2)], [1, 2]),
        ([SeqFilter(0.5, 1.5)], [1]),
        ([SeqFilter(1.2, 1.8)], []),
        ([SeqFilter(None, 0)], [0]),
        # SPEC §9.6: from −123.99999999999999 excludes −124 and includes −123.
        ([TimeFilter(-123.99999999999999, None)], [1, 2]),
        ([TimeFilter(None, -123.00000000000001)], [0]),
        ([TimeFilter(5e-324, None)], [2]),
        ([TimeFilter(None, -5e-324)], [0, 1]),
        ([TimeFilter(12, 12)], [2]),
        ([TypeFilter(("tool/call",))], [1]),
        ([TypeFilter(("user/message", "tool/call"))], [0, 1, 2]),
        ([TypeFilter(())], []),
        ([SurfaceFilter(("shadowed", "log-only"))], [0, 2]),
        ([SurfaceFilter(("current",))], [1]),
        ([SurfaceFilter(())], []),
        ([SeqFilter(0, 2), TypeFilter(("user/message",)), SurfaceFilter(("log-only",))], [2]),
    ],
)
def test_event_filters(
    two_sessions: TantivyIndex, filters: list[EventMetadataFilter], expected: list[int]
) -> None:
    assert sorted(events(two_sessions, "a", "needle", filters)) == expected


def test_event_filters_pick_the_session_best_match(two_sessions: TantivyIndex) -> None:
    hits, _ = two_sessions.search_sessions(
        "needle",
        [],
        [SurfaceFilter(("shadowed",))],
        live_ids=NONE,
        exclude_session_ids=NONE,
        limit=5,
    )
    assert [(h.session_id, h.seq, h.surface, h.time) for h in hits] == [("a", 0, "shadowed", -124)]


def test_long_raw_values_still_filter(index: TantivyIndex) -> None:
    cwd = "/" + "x" * 20_000
    sid = "s" * 17_000
    put(index, doc(sid, 0, "needle", cwd=cwd, type="t" * 30_000), doc("other", 0, "needle"))
    assert sessions(index, "needle", [CwdFilter((cwd,))]) == [sid]
    assert sessions(index, "needle", [IdFilter((sid,))]) == [sid]
    assert events(index, sid, "needle", [TypeFilter(("t" * 30_000,))]) == [0]


# ---- ranking (SPEC difference 2) -----------------------------------------------------------------
def test_spec_tie_example_adapted_to_bm25(index: TantivyIndex) -> None:
    put(
        index,
        doc("a", 0, "😀😀 alpha beta BRAID 😀😀"),
        doc("b", 0, "alpha beta"),
        doc("c", 0, "alpha middle beta"),
        doc("d", 0, "alpha beta"),
    )
    hits, more = index.search_sessions(
        "alpha beta", [], [], live_ids=NONE, exclude_session_ids=NONE, limit=5, snippet_chars=5
    )
    assert [h.session_id for h in hits] == ["b", "d", "a"]
    assert more is False
    assert all(len(h.snippet) <= 5 for h in hits)
    hits, more = index.search_sessions(
        "alpha beta", [], [], live_ids=NONE, exclude_session_ids=NONE, limit=2
    )
    assert [h.session_id for h in hits] == ["b", "d"] and more is True
    hits, more = index.search_sessions(
        "alpha beta", [], [], live_ids=NONE, exclude_session_ids=NONE, limit=3
    )
    assert len(hits) == 3 and more is False


def test_ties_break_by_time_then_binary_session_id(index: TantivyIndex) -> None:
    put(
        index,
        doc("é", 0, "needle", time=5),
        doc("a", 0, "needle", time=5),
        doc("B", 0, "needle", time=5),
        doc("late", 0, "needle", time=6),
        doc("early", 0, "needle", time=1),
    )
    assert sessions(index, "needle") == ["late", "B", "a", "é", "early"]


def test_session_best_match_prefers_score_then_time_then_seq(index: TantivyIndex) -> None:
    put(
        index,
        doc("s", 0, "needle and a long tail of other words", time=50),
        doc("s", 1, "needle", time=10),
        doc("s", 2, "needle", time=20),
        doc("s", 3, "needle", time=20),
    )
    hits, _ = index.search_sessions(
        "needle", [], [], live_ids=NONE, exclude_session_ids=NONE, limit=5
    )
    assert [(h.session_id, h.seq) for h in hits] == [("s", 3)]
    assert events(index, "s", "needle") == [3, 2, 1, 0]


def test_search_events_more_flag(index: TantivyIndex) -> None:
    put(index, *(doc("s", i, "needle") for i in range(5)), doc("t", 0, "needle"))
    hits, more = index.search_events("s", "needle", [], limit=4)
    assert [h.seq for h in hits] == [4, 3, 2, 1] and more is True
    hits, more = index.search_events("s", "needle", [], limit=5)
    assert len(hits) == 5 and more is False


def test_hits_carry_the_event_fields(index: TantivyIndex) -> None:
    put(index, doc("s", 7, "needle", time=-3, type="tool/result", surface="log-only"))
    hits, _ = index.search_events("s", "needle", [], limit=5)
    assert hits == [EventHit("s", 7, "tool/result", -3, "log-only", "needle")]


def test_long_tokens_still_match_as_phrases(index: TantivyIndex) -> None:
    a, b = "a" * 10_000, "b" * 10_000
    put(index, doc("s", 0, f"{a} {b} tail"))
    assert sessions(index, f"{a} {b}") == ["s"]
    assert sessions(index, f"{b} tail") == ["s"]


# ---- writes --------------------------------------------------------------------------------------
def test_upsert_is_idempotent_and_replaces(index: TantivyIndex) -> None:
    put(index, doc("s", 0, "needle"), doc("s", 0, "needle"))
    put(index, doc("s", 0, "needle"))
    assert index.num_docs() == 1
    put(index, doc("s", 0, "replacement", surface="shadowed"))
    assert index.num_docs() == 1
    assert sessions(index, "needle") == []
    hits, _ = index.search_events("s", "replacement", [], limit=5)
    assert hits[0].surface == "shadowed"



def test_whole_session_upsert_replaces_every_document_of_the_session(tmp_path: Path) -> None:
    """``upsert(docs, session=s)``: one delete of the session, then plain adds — a
    leftover document of ``s`` (committed by an earlier writer) goes, other sessions stay,
    and the new documents group as one session with the session's other new ones."""
    path = tmp_path / "index"
    writer = TantivyIndex(path, writable=True, heap_bytes=20_000_000)
    put(writer, doc("s", 7, "needle leftover"), doc("t", 0, "needle"))
    writer.close()
    writer = TantivyIndex(path, writable=True, heap_bytes=20_000_000)
    try:
        writer.upsert([doc("s", 0, "needle"), doc("s", 1, "needle fresh")], session="s")
        writer.commit()
        assert session_doc_count(writer, "s") == 2
        assert sessions(writer, "leftover") == []
        assert sorted(sessions(writer, "needle")) == ["s", "t"]
        writer.upsert([doc("s", 2, "needle", time=99)])  # a later batch: per-document
        writer.commit()
        hits, _ = writer.search_sessions(
            "needle", [], [], live_ids=NONE, exclude_session_ids=NONE, limit=10
        )
        assert [(h.session_id, h.seq) for h in hits] == [("s", 2), ("t", 0)]
    finally:
        writer.close()

def test_delete_event_and_session(index: TantivyIndex) -> None:
    put(index, doc("s", 0, "needle"), doc("s", 1, "needle"), doc("t", 0, "needle"))
    delete_event(index, "s", 0)
    delete_event(index, "s", 99)
    index.commit()
    assert session_doc_count(index, "s") == 1
    index.delete_session("s")
    index.commit()
    assert session_doc_count(index, "s") == 0
    assert sessions(index, "needle") == ["t"]
    put(index, doc("s", 5, "needle", time=99))
    assert sessions(index, "needle") == ["s", "t"]


def test_rollback_discards_uncommitted_changes(index: TantivyIndex) -> None:
    put(index, doc("s", 0, "needle"))
    index.upsert([doc("s", 1, "needle"), doc("t", 0, "needle")])
    index.delete_session("s")
    index.rollback()
    index.commit()
    assert index.num_docs() == 1
    assert sessions(index, "needle") == ["s"]


def test_reader_sees_commits_after_reload(tmp_path: Path) -> None:
    path = tmp_path / "index"
    early_reader = TantivyIndex(path, writable=False)
    assert early_reader.num_docs() == 0
    assert sessions(early_reader, "needle") == []
    writer = TantivyIndex(path, writable=True, heap_bytes=20_000_000)
    try:
        reader = TantivyIndex(path, writable=False)  # no lock: the writer holds it
        put(writer, doc("s", 0, "needle"))
        assert reader.num_docs() == 0
        reader.reload()
        early_reader.reload()
        assert reader.num_docs() == 1 and early_reader.num_docs() == 1
        assert sessions(reader, "needle") == ["s"]
        writer.upsert([doc("t", 0, "needle")])
        reader.reload()
        assert reader.num_docs() == 1  # uncommitted
        writer.commit()
        reader.reload()
        assert sorted(sessions(reader, "needle")) == ["s", "t"]
        with pytest.raises(RuntimeError):
            reader.upsert([doc("u", 0, "x")])
        with pytest.raises(ValueError):
            TantivyIndex(path, writable=True, heap_bytes=20_000_000)
    finally:
        writer.close()


def test_session_ordinals_survive_reopening(tmp_path: Path) -> None:
    path = tmp_path / "index"
    writer = TantivyIndex(path, writable=True, heap_bytes=20_000_000)
    put(writer, doc("s", 0, "needle"), doc("t", 0, "needle"))
    writer.close()
    writer = TantivyIndex(path, writable=True, heap_bytes=20_000_000)
    try:
        put(writer, doc("s", 1, "needle", time=50), doc("u", 0, "needle"))
        hits, _ = writer.search_sessions(
            "needle", [], [], live_ids=NONE, exclude_session_ids=NONE, limit=10
        )
        assert [(h.session_id, h.seq) for h in hits] == [("s", 1), ("t", 0), ("u", 0)]
    finally:
        writer.close()


# ---- randomized: grouped search equals a brute-force grouping of Tantivy's own scores ------------
def _brute_force(
    ix: TantivyIndex,
    query: str,
    session_filters: Sequence[SessionFilter],
    event_filters: Sequence[EventMetadataFilter],
    exclude: frozenset[str],
    live_ids: frozenset[str],
) -> list[tuple[str, int]]:
    """Each session's best document by (score, time, seq), sessions by (score desc,
    time desc, session id asc, seq desc), computed in Python from every match."""
    best: dict[str, tuple[float, int, int]] = {}
    for score, session_id, seq, time in scored_matches(
        ix, query, session_filters, event_filters, live_ids=live_ids, exclude_session_ids=exclude
    ):
        held = best.get(session_id)
        if held is None or (score, time, seq) > held:
            best[session_id] = (score, time, seq)
    ranked = sorted(best.items(), key=lambda kv: (-kv[1][0], -kv[1][1], kv[0], -kv[1][2]))
    return [(sid, key[2]) for sid, key in ranked]


@pytest.mark.slow
def test_grouped_search_equals_brute_force_on_20k_random_docs(tmp_path: Path) -> None:
    rng = random.Random(20_000)
    ix = TantivyIndex(tmp_path / "index", writable=True, heap_bytes=50_000_000)
    try:
        vocab = ["alpha", "beta", "gamma", "delta", "needle", "中", "文", "x"]
        ids = [f"s{i:03d}" for i in range(250)] + ["B", "a", "é", "Z9"]
        docs = []
        for n in range(20_000):
            sid = rng.choice(ids)
            words = rng.choices(vocab, weights=[8, 6, 4, 3, 2, 2, 2, 1], k=rng.randrange(1, 7))
            docs.append(
                IndexDoc(
                    session_id=sid,
                    seq=n,
                    type=rng.choice(["user/message", "tool/call"]),
                    time=rng.randrange(0, 4),  # few distinct times: (score, time) ties
                    surface=rng.choice(["current", "shadowed", "log-only"]),
                    text=" ".join(words),
                    cwd=rng.choice(["/w", None]) if sid[-1] in "0123" else "/v",
                    parent=None,
                    created_at=sum(map(ord, sid)) % 50,
                )
            )
        for start in range(0, 20_000, 5_000):  # several segments
            ix.upsert(docs[start : start + 5_000])
            ix.commit()
        queries = ["alpha", "needle", "alpha beta", "beta alpha beta", "中 文", "x", "gamma needle"]
        filter_sets: list[tuple[list[SessionFilter], list[EventMetadataFilter]]] = [
            ([], []),
            ([CwdFilter(("/w", None))], [SurfaceFilter(("current",))]),
            ([CreatedAtFilter(10.5, 40)], [TimeFilter(0.5, 2.5), TypeFilter(("tool/call",))]),
            ([AvailabilityFilter(("live",))], [SeqFilter(1000, 15_000)]),
        ]
        live = frozenset(rng.sample(ids, 100))
        checked = 0
        for query in queries:
            for sf, ef in filter_sets:
                exclude = frozenset(rng.sample(ids, 3))
                expected = _brute_force(ix, query, sf, ef, exclude, live)
                checked += len(expected)
                for limit in (1, 3, 20, 101, 400):
                    hits, more = ix.search_sessions(
                        query, sf, ef, live_ids=live, exclude_session_ids=exclude, limit=limit
                    )
                    got = [(h.session_id, h.seq) for h in hits]
                    assert got == expected[:limit], (query, sf, ef, limit)
                    assert more == (len(expected) > limit)
        assert checked > 1_000
        # Within one session: score desc, time desc, seq desc.
        for sid in ("a", "s007"):
            rows = scored_matches(ix, "alpha", [IdFilter((sid,))], [])
            rows.sort(key=lambda r: (r[0], r[3], r[2]), reverse=True)
            expected_seqs = [seq for _, _, seq, _ in rows]
            for limit in (1, 5, 10_000):
                hits, more = ix.search_events(sid, "alpha", [], limit=limit)
                assert [h.seq for h in hits] == expected_seqs[:limit]
                assert more == (len(expected_seqs) > limit)
    finally:
        ix.close()


def _contains_phrase(doc_tokens: list[str], phrase: list[str]) -> bool:
    n = len(phrase)
    return any(doc_tokens[i : i + n] == phrase for i in range(len(doc_tokens) - n + 1))


def test_phrase_matches_equal_a_token_scan(index: TantivyIndex) -> None:
    """The pair-term acceleration never drops a document the phrase matches."""
    rng = random.Random(3)
    vocab = ["Alpha", "alpha", "BETA", "café", "CAFE", "中", "文", "x_y", "a-b", "😀", "İ", "i"]
    texts = {}
    for n in range(600):
        text = rng.choice(["", " ", "—"]).join(rng.choices(vocab, k=rng.randrange(1, 9)))
        texts[n] = text
    put(index, *(doc(f"s{n % 40}", n, text) for n, text in texts.items()))
    for _ in range(150):
        query = " ".join(rng.choices(vocab, k=rng.randrange(1, 4)))
        phrase = analyze(query)
        expected = {n for n, t in texts.items() if phrase and _contains_phrase(analyze(t), phrase)}
        got = {seq for _, _, seq, _ in scored_matches(index, query, [], [])}
        assert got == expected, query


def test_reader_reload_sees_every_rapid_commit(tmp_path: Path) -> None:
    path = tmp_path / "index"
    writer = TantivyIndex(path, writable=True, heap_bytes=20_000_000)
    try:
        reader = TantivyIndex(path, writable=False)
        for n in range(1, 30):
            put(writer, doc("s", n, "needle"))
            reader.reload()
            assert reader.num_docs() == n
            reader.reload()  # unchanged: no-op
            assert reader.num_docs() == n
    finally:
        writer.close()


def test_lone_surrogates_never_reach_tantivy(index: TantivyIndex) -> None:
    sid = "s\ud800"
    put(index, doc(sid, 0, "abc\udc00def needle", cwd="/w\udfff", type="t\ud801"))
    assert sessions(index, "abc def") == [sid]
    assert sessions(index, "abc\ud800def") == [sid]
    assert sessions(index, "needle", [CwdFilter(("/w\udfff",))]) == [sid]
    hits, _ = index.search_events(sid, "needle", [TypeFilter(("t\ud801",))], limit=5)
    assert [(h.session_id, h.type, h.snippet) for h in hits] == [
        (sid, "t\ud801", "abc\ufffddef needle")
    ]


def test_dump_docs_returns_the_stored_documents(index: TantivyIndex) -> None:
    a = doc("b", 1, "x\u0000y", cwd="/w", parent="p", created_at=7, time=3, surface="log-only")
    b = doc("a", 2, "needle")
    put(index, a, b)
    assert dump_docs(index) == [
        dataclasses.replace(b, cwd=None, parent=None),
        IndexDoc("b", 1, "user/message", 3, "log-only", "x\ufffdy", None, None, 7),
    ]


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=200))
def test_ascii_fast_path_tokens_equal_the_analyzer(text: str) -> None:
    from indexer.store.tantivy import analyze, doc_tokens

    assert doc_tokens(text) == analyze(text)


_MIXED = st.sampled_from(
    list("aZ09 _-.,\n")
    + list("中文的了是一")
    + list("，。、：；！？“”‘’（）《》【】—…·「」✅🚀€→")
    + list("éİßあア한々〇⺀ｱＡ０\u200b\ue000")
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_MIXED, max_size=120).map("".join))
def test_han_fast_path_tokens_equal_the_analyzer(text: str) -> None:
    """Text of ASCII, CJK ideographs and separators takes the Python path; anything else
    (kana, hangul, accented letters, Han-script marks like 々, radicals, fullwidth
    letters, private use) falls back to the analyzer — equal tokens either way."""
    from indexer.store.tantivy import analyze, doc_tokens

    assert doc_tokens(text) == analyze(text)


def test_every_han_fast_path_character_tokenizes_as_the_analyzer_says() -> None:
    """Each ideograph of U+4E00..U+9FFF is one unchanged token; each listed separator
    splits tokens (exhaustive over both sets)."""
    from indexer.store.tantivy import analyze
    from indexer.store.tantivy.analyzer import SEPARATORS

    ideographs = "".join(chr(c) for c in range(0x4E00, 0xA000))
    assert analyze(ideographs) == list(ideographs)
    for ch in sorted(SEPARATORS):
        assert analyze(f"Ab{ch}中{ch}9") == ["ab", "中", "9"], hex(ord(ch))
