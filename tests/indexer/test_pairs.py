"""The selective ``pairs`` field: which pairs documents hold, which query a phrase
becomes, and that the query matches exactly the documents of the positional phrase."""

from __future__ import annotations

import tempfile
from pathlib import Path

import tantivy
from hypothesis import given, settings
from hypothesis import strategies as st

from indexer.store.tantivy import IndexDoc, TantivyIndex, analyze
from indexer.store.tantivy.analyzer import (
    FREQUENT_TOKENS,
    MAX_PAIR_TOKEN_CHARS,
    PAIR_GAP,
    frequent,
    indexed_pair,
    pair_terms,
    pairs_text,
)
from indexer.store.tantivy.queries import text_query
from indexer.store.tantivy.schema import build_schema

COMMON = ("the", "file", "is", "to")
RARE = ("zqrare", "zqodd", "xylograph")


def test_the_shipped_list_holds_common_words_and_no_rare_ones() -> None:
    assert set(COMMON) <= FREQUENT_TOKENS
    assert not set(RARE) & FREQUENT_TOKENS
    assert all(1 < len(t) <= MAX_PAIR_TOKEN_CHARS and analyze(t) == [t] for t in FREQUENT_TOKENS)


def test_single_characters_are_frequent_by_rule() -> None:
    assert all(frequent(t) for t in ("a", "7", "中", "文", "é"))
    assert frequent("the") and not frequent("zqrare")


def test_only_pairs_of_two_frequent_tokens_are_indexed() -> None:
    assert indexed_pair("the", "file") and indexed_pair("中", "文") and indexed_pair("a", "the")
    assert not indexed_pair("the", "zqrare") and not indexed_pair("zqrare", "the")
    tokens = ["the", "file", "zqrare", "is", "to", "the", "file"]
    assert pair_terms(tokens) == ["the_file", "is_to", "to_the", "the_file"]


def test_the_field_keeps_every_pair_s_length_with_gaps() -> None:
    """One gap per pair that is not indexed: BM25 then normalizes a pair's score by the
    document's length, exactly as when every pair was indexed."""
    tokens = ["the", "file", "zqrare", "is", "to"]
    assert pairs_text(tokens) == f"the_file is_to {PAIR_GAP} {PAIR_GAP}"
    assert len(pairs_text(tokens).split()) == len(tokens) - 1
    assert pairs_text(["the"]) == pairs_text([]) == ""
    assert pairs_text(["the", "file"]) == "the_file"


def _shape(tokens: list[str]) -> str:
    return repr(text_query(build_schema(), tokens))


def test_one_token_is_a_term_of_text() -> None:
    assert _shape(["zqrare"]).startswith("Query(TermQuery(Term(field=7,")
    assert '"zqrare"' in _shape(["zqrare"])


def test_two_frequent_tokens_are_the_scored_pair_term() -> None:
    shape = _shape(["the", "file"])
    assert shape == 'Query(TermQuery(Term(field=8, type=Str, "the_file")))'


def test_a_phrase_with_a_rare_token_is_the_text_phrase_plus_its_indexed_pairs() -> None:
    shape = _shape(["the", "zqrare"])
    assert "BooleanQuery" in shape and "PhraseQuery { field: Field(7)" in shape
    assert "Const(" not in shape  # no pair of the query is indexed
    shape = _shape(["zqrare", "the", "file", "is", "the", "file"])
    assert shape.count("PhraseQuery") == 1 and "Field(7)" in shape
    assert shape.count("Const(score=0") == 3  # the_file (once), file_is, is_the
    assert '"the_file"' in shape and '"file_is"' in shape and '"is_the"' in shape


def test_three_frequent_tokens_are_the_text_phrase_plus_unscored_pairs() -> None:
    shape = _shape(["the", "file", "is"])
    assert "PhraseQuery { field: Field(7)" in shape
    assert shape.count("Const(score=0, query=TermQuery(Term(field=8") == 2


# ---- the property: exactly the phrase's documents -----------------------------------------------
ALPHABET = ("the", "file", "is", "a", "中", "文", "zqrare", "zqodd")
sequences = st.lists(st.sampled_from(ALPHABET), min_size=1, max_size=7)


def _positional(schema: tantivy.Schema, tokens: list[str]) -> tantivy.Query:
    if len(tokens) == 1:
        return tantivy.Query.term_query(schema, "text", tokens[0])
    return tantivy.Query.phrase_query(schema, "text", list[str | tuple[int, str]](tokens))


def _seqs(searcher: tantivy.Searcher, query: tantivy.Query) -> set[int]:
    hits = searcher.search(query, limit=1_000, count=False).hits
    return {int(searcher.fast_field_values("seq", [addr])[0] or 0) for _, addr in hits}


@settings(max_examples=60, deadline=None)
@given(
    docs=st.lists(sequences, min_size=1, max_size=25),
    queries=st.lists(st.lists(st.sampled_from(ALPHABET), min_size=1, max_size=4), max_size=8),
    separator=st.sampled_from([" ", "-", "\n", ", "]),
)
def test_the_query_matches_exactly_the_positional_phrase(
    docs: list[list[str]], queries: list[list[str]], separator: str
) -> None:
    """Random token sequences mixing frequent and rare tokens: the built query (pair
    term, or phrase plus pair filters) returns the plain positional phrase's documents,
    which are the documents holding the phrase."""
    with tempfile.TemporaryDirectory() as tmp:
        ix = TantivyIndex(Path(tmp) / "index", writable=True, heap_bytes=20_000_000)
        try:
            ix.upsert(
                IndexDoc("s", n, "user/message", 0, "current", separator.join(d), None, None, 0)
                for n, d in enumerate(docs)
            )
            ix.commit()
            searcher = ix._searcher()
            assert searcher is not None
            schema = ix._schema
            for tokens in [*queries, *(d[:3] for d in docs), *(d[1:] for d in docs if d[1:])]:
                expected = {
                    n
                    for n, d in enumerate(docs)
                    if any(d[i : i + len(tokens)] == tokens for i in range(len(d)))
                }
                assert _seqs(searcher, _positional(schema, tokens)) == expected, tokens
                assert _seqs(searcher, text_query(schema, tokens)) == expected, tokens
        finally:
            ix.close()
