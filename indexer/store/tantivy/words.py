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

__all__ = ["WordsQuery", "query_units", "words_text"]

_STEMMER: Final = (
    tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.whitespace())
    .filter(tantivy.Filter.stemmer("english"))
    .build()
)
_CAMEL_WORD: Final = re.compile(r"(?<![A-Za-z0-9])[A-Za-z]*[a-z][A-Z][A-Za-z]*(?![A-Za-z0-9])")
"""An identifier in camel case: letters only (a token with digits — a hash, a key, an
id — is never split), a lowercase letter followed by an uppercase one somewhere."""
_CAMEL_PART: Final = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")
PHRASE_BOOST: Final = 2.0
"""What the literal phrase adds, relative to a word's own score: enough to put the
documents holding the phrase first, not to make the words irrelevant."""
TOKEN_BOOST: Final = 0.5
"""What each exact token (not only its stem) adds."""


def _stems(tokens: Iterable[str]) -> list[str]:
    joined = " ".join(tokens)
    return list(_STEMMER.analyze(joined)) if joined else []


def _camel_parts(text: str) -> list[str]:
    """The lowercased parts of every camel-case identifier in ``text``, in order."""
    return [part.lower() for word in _CAMEL_WORD.findall(text) for part in _split(word)]


def _split(word: str) -> list[str]:
    return [p for p in _CAMEL_PART.findall(word) if len(p) > 1]


def words_text(text: str, tokens: list[str]) -> str:
    """The ``words`` field value of a document: the stems of its analyzer ``tokens`` and
    of the parts of its camel-case identifiers, space-separated (the field keeps
    frequencies, no positions)."""
    return " ".join(_stems([*tokens, *_camel_parts(text)]))


Unit = tuple[str, tuple[str, ...]]
"""One word of a query: its stem, and for a camel-case identifier the stems of its parts
(a document holding the identifier whole, or every part, matches it)."""


def query_units(query: str, tokens: list[str]) -> list[Unit]:
    """The units a query must match, in order, each once."""
    parts = {
        w.lower(): tuple(_stems(p.lower() for p in _split(w))) for w in _CAMEL_WORD.findall(query)
    }
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
