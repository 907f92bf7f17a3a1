"""The ``sessionq`` analyzer (SPEC deliberate difference 3) and the token forms built on it.

Documents and queries go through the same analyzer, so a query token is exactly a term
the ``text`` field holds. The ``pairs`` field value (adjacent pairs of frequent tokens)
is derived here too, with the rule that decides, alike for documents and queries, which
pairs are indexed as one term (``indexed_pair``).
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from importlib import resources
from typing import Final

import tantivy

from indexer.store.tantivy.snippet import MATCH_END, MATCH_START

ANALYZER_NAME: Final = "sessionq"

_CJK: Final = r"\p{Han}\p{Hiragana}\p{Katakana}\p{Hangul}"
TOKEN_PATTERN: Final = rf"[{_CJK}]|[[\p{{L}}\p{{N}}\p{{Mn}}\p{{Mc}}\p{{Co}}]--[{_CJK}]]+"
"""One token per Han/Kana/Hangul character; otherwise a maximal run of letters, numbers,
combining marks and private-use characters (``unicode61``'s token characters plus marks,
so Indic words stay whole). Everything else — ``_``, punctuation, symbols, emoji,
whitespace — separates tokens. The second class subtracts CJK so that ``é中x`` is
three tokens rather than one letter run."""


def build_analyzer() -> tantivy.TextAnalyzer:
    """``TOKEN_PATTERN``, then ASCII-fold, lowercase, ASCII-fold.

    Folding before lowercasing turns ``İ`` into ``i`` (lowercasing first yields ``i`` +
    U+0307, which no query types); the second fold catches lowercase forms whose
    uppercase the table lacks. Folding maps ``é``→``e``, ``ß``→``ss``, ``æ``→``ae`` — a
    superset of ``unicode61``'s diacritic removal, applied alike to documents and queries.
    """
    return (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.regex(TOKEN_PATTERN))
        .filter(tantivy.Filter.ascii_fold())
        .filter(tantivy.Filter.lowercase())
        .filter(tantivy.Filter.ascii_fold())
        .build()
    )


ANALYZER: Final = build_analyzer()


SURROGATE: Final = re.compile("[\ud800-\udfff]")
"""Lone surrogates: JavaScript strings (a split stream delta) carry them; Rust strings
cannot, so they never reach Tantivy."""


def without_surrogates(text: str) -> str:
    return SURROGATE.sub("\ufffd", text) if SURROGATE.search(text) else text


def analyze(text: str) -> list[str]:
    """The normalized tokens of ``text`` in order: the terms a document or query holds.

    A lone surrogate separates tokens, as the U+FFFD that replaces it in documents does.
    """
    return list(ANALYZER.analyze(without_surrogates(text)))


def sanitize_text(text: str) -> str:
    """The indexed and stored form of document text.

    SPEC §7.4: U+0000, U+FDD0 and U+FDD1 become U+FFFD — the two non-characters are the
    highlight markers of §7.8, so stored text must never contain them. Lone surrogates
    become U+FFFD too (see ``SURROGATE``); code-point offsets are unchanged.
    """
    for ch in ("\u0000", MATCH_START, MATCH_END):
        if ch in text:
            text = text.replace(ch, "\ufffd")
    return without_surrogates(text)


_ASCII_WORD: Final = re.compile(r"[a-z0-9]+")
_HAN_OR_ASCII_WORD: Final = re.compile(r"[\u4e00-\u9fff]|[a-z0-9]+")
_NOT_ASCII_OR_HAN: Final = re.compile(r"[^\x00-\x7f\u4e00-\u9fff]")

_SEPARATOR_CATEGORIES: Final = frozenset(
    {"Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po", "Sm", "Sc", "Sk", "So", "Zs", "Zl", "Zp", "Cc", "Cf"}
)
_SEPARATOR_BLOCKS: Final = (
    (0x0080, 0x00FF),  # Latin-1 punctuation and signs
    (0x2000, 0x2BFF),  # punctuation, currency, arrows, math, shapes, symbols, dingbats
    (0x3000, 0x303F),  # CJK punctuation
    (0xFE30, 0xFE4F),  # CJK compatibility forms
    (0xFF00, 0xFF65),  # fullwidth punctuation
    (0xFFFD, 0xFFFD),  # what sanitizing puts in
    (0x1F000, 0x1F1FF),  # game symbols, enclosed alphanumerics
    (0x1F300, 0x1FAFF),  # emoji, pictographs
)


def _separators() -> frozenset[str]:
    """Characters of long-assigned blocks that every tokenizer here treats alike: never
    part of a token (punctuation, symbols, spaces, controls, format characters), none of
    a CJK script (the Han radicals are symbols of the Han script: not in these blocks),
    and unchanged by lowercasing."""
    chars = (chr(c) for lo, hi in _SEPARATOR_BLOCKS for c in range(lo, hi + 1))
    return frozenset(
        ch for ch in chars if unicodedata.category(ch) in _SEPARATOR_CATEGORIES and ch.lower() == ch
    )


SEPARATORS: Final = _separators()


def doc_tokens(text: str) -> list[str]:
    """The analyzer's tokens of ``text``, computed in Python where that is exactly the
    analyzer: ASCII text (most of it) is "runs of [A-Za-z0-9], lowercased"; text whose
    other characters are all CJK Unified Ideographs (U+4E00..U+9FFF, one token each,
    untouched by folding) or ``SEPARATORS`` adds one token per ideograph. Anything else
    goes through the analyzer (several times slower from Python)."""
    if text.isascii():
        return _ASCII_WORD.findall(text.lower())
    if SEPARATORS.issuperset(_NOT_ASCII_OR_HAN.findall(text)):
        return _HAN_OR_ASCII_WORD.findall(text.lower())
    return list(ANALYZER.analyze(text))


# ---- token pairs (the ``pairs`` field) -----------------------------------------------------------
MAX_TERM_CHARS: Final = 16_000
"""At most 64,000 UTF-8 bytes: below Tantivy's 65,530-byte token limit."""

MAX_PAIR_TOKEN_CHARS: Final = 64
"""The longest listed frequent token: a pair term always stays far below Tantivy's
limit, and no listed token holds whitespace (the ``pairs`` field splits on it)."""


def _load_frequent() -> frozenset[str]:
    text = resources.files("indexer.store.tantivy").joinpath(FREQUENT_FILE).read_text("utf-8")
    tokens = frozenset(line for line in text.splitlines() if line)
    bad = [t for t in tokens if len(t) > MAX_PAIR_TOKEN_CHARS or analyze(t) != [t]]
    if bad:
        raise ValueError(f"{FREQUENT_FILE} holds tokens the analyzer never yields: {bad[:3]}")
    return tokens


FREQUENT_FILE: Final = "frequent_tokens.txt"
FREQUENT_TOKENS: Final[frozenset[str]] = _load_frequent()
"""The most frequent tokens of real agent logs (``worker.devtools.frequent_tokens``),
shipped with the package and read once."""

FREQUENT_DIGEST: Final = hashlib.sha256(
    "\n".join(sorted(FREQUENT_TOKENS)).encode("utf-8")
).hexdigest()[:16]
"""Identifies the list: part of the index format id, since the list decides which pair
terms documents hold (``schema.INDEX_FORMAT``)."""


def frequent(token: str) -> bool:
    """A single character (each CJK character, letter or digit token) or a listed token.

    Only pairs of two frequent tokens are indexed: a phrase with a rare token is fast as a
    positional phrase already (the rare token's short posting list drives it), so pairs of
    rare tokens would cost index space and buy nothing.
    """
    return len(token) == 1 or token in FREQUENT_TOKENS


def indexed_pair(a: str, b: str) -> bool:
    """Whether ``a_b`` is a term of the ``pairs`` field — decided alike for documents
    and queries. (Tokens never contain ``_``, so ``a_b`` names one pair.)"""
    return frequent(a) and frequent(b)


def pair_terms(tokens: list[str]) -> list[str]:
    """The indexed pairs ``a_b`` of adjacent tokens, in order (repeats kept: the field
    holds frequencies, which score a two-token phrase)."""
    listed = list(map(frequent, tokens))  # ``indexed_pair``, one test per token
    return [
        f"{a}_{b}"
        for a, b, fa, fb in zip(tokens, tokens[1:], listed, listed[1:], strict=False)
        if fa and fb
    ]


PAIR_GAP: Final = "_"
"""Stands for each adjacent pair that is not indexed (a real pair ``a_b`` has text on
both sides of the underscore). It keeps the field's length what it would be with every
pair: BM25 normalizes a pair's score by that length, so a two-token phrase ranks
documents by their length, as the phrase does. One term with a frequency per document
costs far less than the pairs it stands for."""


def pairs_text(tokens: list[str]) -> str:
    """The ``pairs`` field value: the indexed pairs, then one ``PAIR_GAP`` for each pair
    that is not, space-separated (the field keeps no positions, so order is moot)."""
    if len(tokens) < 2:
        return ""
    pairs = pair_terms(tokens)
    gaps = len(tokens) - 1 - len(pairs)
    return " ".join(pairs) if not gaps else " ".join([*pairs, *([PAIR_GAP] * gaps)])
