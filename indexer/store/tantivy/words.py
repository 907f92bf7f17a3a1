"""Word matching (``--search-mode words``): the query's words in any order, each word by
its English stem, identifiers matched whole or by their parts.

The upstream rule (``phrase``) finds the query as one literal phrase: exact, and for the
queries agents type (``retry backoff config``, ``user gets logged out after refresh``)
most often nothing. This module gives each document a second view of its text, the
``words`` field: the stem of every token (``caching``, ``cached`` → ``cach``) and, for an
identifier written in camel case, the stems of its parts too (``OrderService`` →
``orderservic``, ``order``, ``servic``; ``order_service`` is two tokens already). A query
is read the same way into *units*, and

1. every unit must match (any order, anywhere in the document), BM25 over ``words``
   ranks, and the query's exact tokens in ``text`` (the literal phrase above all) add to
   the score, so the exact phrase ranks first;
2. when that finds nothing, any unit matches, ranked the same way (fewer words, lower).

The query stays literal text: it is tokenized, never parsed; no operator, field or
wildcard reaches Tantivy from it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final

import tantivy

__all__ = ["STEMS_ANALYZER", "STEMS_ANALYZER_NAME", "WordsQuery", "query_units", "words_text"]

STEMS_ANALYZER_NAME: Final = "sessionq_stems"
STEMS_ANALYZER: Final = (
    tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.whitespace())
    .filter(tantivy.Filter.stemmer("english"))
    .build()
)
"""The ``words`` field's analyzer: a document gives it analyzer tokens (and identifier
parts), space-separated, and Tantivy stems them as it indexes them; queries are stemmed
by the same analyzer (``_stems``)."""
_STEMMER: Final = STEMS_ANALYZER
_CAMEL_PART: Final = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")
PHRASE_BOOST: Final = 2.0
"""What the literal phrase adds, relative to a word's own score: enough to put the
documents holding the phrase first, not to make the words irrelevant."""
TOKEN_BOOST: Final = 0.5
"""What each exact token (not only its stem) adds."""


_STEMS: dict[str, str] = {}
_STEMS_KEPT: Final = 262_144
"""Stems remembered (a pure function of the token: documents repeat their words, and
one call into the stemmer per new word is most of what the ``words`` field costs)."""


def _stems(tokens: Iterable[str]) -> list[str]:
    """The English stem of each token (tokens hold no whitespace: one stem each)."""
    tokens = list(tokens)
    known = _STEMS
    new = [t for t in dict.fromkeys(tokens) if t not in known]
    if new:
        if len(known) + len(new) > _STEMS_KEPT:
            known.clear()
        stems = list(_STEMMER.analyze(" ".join(new)))
        if len(stems) != len(new):  # not one stem per token: stem each alone
            stems = [next(iter(_STEMMER.analyze(t)), t) for t in new]
        known.update(zip(new, stems, strict=True))
    return [known[t] for t in tokens]


_HUMP: Final = re.compile(r"[a-z][A-Z]")
_ASCII_LETTERS: Final = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
_DIGITS: Final = frozenset("0123456789")


def _camel_words(text: str) -> list[str]:
    """The identifiers in camel case in ``text``: runs of ASCII letters holding a
    lowercase letter followed by an uppercase one, not next to a digit (a token with
    digits — a hash, a key, an id — is never split). Found from the humps (rare)
    outward, not by trying a pattern at every letter."""
    words: list[str] = []
    end = -1
    n = len(text)
    for hump in _HUMP.finditer(text):
        if hump.start() < end:
            continue  # a later hump of the word already taken
        i, j = hump.start(), hump.end()
        while i > 0 and text[i - 1] in _ASCII_LETTERS:
            i -= 1
        while j < n and text[j] in _ASCII_LETTERS:
            j += 1
        end = j
        if (i > 0 and text[i - 1] in _DIGITS) or (j < n and text[j] in _DIGITS):
            continue  # part of a token with digits: never split
        words.append(text[i:j])
    return words


def _camel_parts(text: str) -> list[str]:
    """The lowercased parts of every camel-case identifier in ``text``, in order."""
    return [part.lower() for word in _camel_words(text) for part in _split(word)]


def _split(word: str) -> list[str]:
    return [p for p in _CAMEL_PART.findall(word) if len(p) > 1]


def words_text(text: str, terms: str) -> str:
    """The ``words`` field value of a document: its analyzer tokens (``terms``, joined by
    spaces) and the parts of its camel-case identifiers; Tantivy stems them
    (``STEMS_ANALYZER``; the field keeps frequencies, no positions)."""
    parts = _camel_parts(text)
    return f"{terms} {' '.join(parts)}" if parts else terms


Unit = tuple[str, tuple[str, ...]]
"""One word of a query: its stem, and for a camel-case identifier the stems of its parts
(a document holding the identifier whole, or every part, matches it)."""


def query_units(query: str, tokens: list[str]) -> list[Unit]:
    """The units a query must match, in order, each once."""
    parts = {w.lower(): tuple(_stems(p.lower() for p in _split(w))) for w in _camel_words(query)}
    units: dict[str, Unit] = {}
    for token, stem in zip(tokens, _stems(tokens), strict=True):
        split = parts.get(token, ())
        units.setdefault(stem, (stem, split if len(split) > 1 else ()))
    return list(units.values())


class WordsQuery:
    """A query's two Tantivy queries (module docstring): ``all_words``, then ``any_word``
    when that finds nothing (``None``: one unit, nothing fewer to try). ``phrase`` is
    the literal phrase query of ``tokens`` (the ``phrase`` mode's)."""

    def __init__(
        self, schema: tantivy.Schema, query: str, tokens: list[str], phrase: tantivy.Query
    ) -> None:
        self.units = query_units(query, tokens)
        exact = [_should(_term(schema, "text", t), TOKEN_BOOST) for t in dict.fromkeys(tokens)]
        if len(tokens) > 1:
            exact.append(_should(phrase, PHRASE_BOOST))
        words = [_unit(schema, u) for u in self.units]
        must = [(tantivy.Occur.Must, w) for w in words]
        self.all_words = tantivy.Query.boolean_query(must + exact) if words else None
        any_of = tantivy.Query.boolean_query([(tantivy.Occur.Should, w) for w in words])
        self.any_word = (
            tantivy.Query.boolean_query([(tantivy.Occur.Must, any_of), *exact])
            if len(words) > 1
            else None
        )


def _unit(schema: tantivy.Schema, unit: Unit) -> tantivy.Query:
    stem, parts = unit
    whole = _term(schema, "words", stem)
    if not parts:
        return whole
    every = tantivy.Query.boolean_query(
        [(tantivy.Occur.Must, _term(schema, "words", p)) for p in parts]
    )
    return tantivy.Query.boolean_query(
        [(tantivy.Occur.Should, whole), (tantivy.Occur.Should, every)]
    )


def _should(query: tantivy.Query, boost: float) -> tuple[tantivy.Occur, tantivy.Query]:
    return tantivy.Occur.Should, tantivy.Query.boost_query(query, boost)


def _term(schema: tantivy.Schema, field: str, value: str) -> tantivy.Query:
    return tantivy.Query.term_query(schema, field, value, index_option="freq")
