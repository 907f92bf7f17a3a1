"""Highlight spans and hit snippets (SPEC §7.5, §7.8).

A hit's snippet is positioned by the first occurrence of the query phrase in the
stored text, found exactly as the index analyzer tokenizes it (``first_occurrence``),
marked with ``MATCH_START``/``MATCH_END`` and cut by ``make_snippet``.
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Iterator, Sequence
from typing import Any, Final, cast

import tantivy

from indexer.model.search import EventHit, Surface
from indexer.search_modes import SearchMode
from indexer.store.tantivy.analyzer import ANALYZER, without_surrogates
from indexer.store.tantivy.schema import load_meta, stored_text
from indexer.store.tantivy.snippet import marked, snippet_of

_WINDOW: Final = 4_096
_WINDOW_GROWTH: Final = 4
_ASCII_ALNUM: Final = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")
_ASCII_ALNUM_CI: Final = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ") | _ASCII_ALNUM
_ASCII_LOWER: Final = {c: c + 32 for c in range(ord("A"), ord("Z") + 1)}
_ASCII_TOKEN: Final = re.compile("[a-z0-9]+")
_ASCII_TOKEN_CI: Final = re.compile("[A-Za-z0-9]+")
_NON_ASCII: Final = re.compile("[^\x00-\x7f]")
_SEPARATOR_CACHE: dict[str, bool] = {}
_SEPARATOR_CACHE_MAX: Final = 65_536


def _is_separator(ch: str) -> bool:
    """Whether the analyzer never puts ``ch`` in a token (asked of the analyzer itself:
    a character that forms no token alone belongs to neither token class)."""
    known = _SEPARATOR_CACHE.get(ch)
    if known is None:
        known = not ANALYZER.pre_tokenize(ch).tokens
        if len(_SEPARATOR_CACHE) < _SEPARATOR_CACHE_MAX:
            _SEPARATOR_CACHE[ch] = known
    return known


def _clean_prefix_end(text: str) -> int:
    """End of the longest prefix whose tokens are all ``[A-Za-z0-9]`` runs, cut at a
    separator: before the first non-ASCII token character, every non-ASCII character
    separates tokens, so there the analyzer's tokens are the ASCII runs, lowercased
    (folding leaves ASCII alone). ``len(text)`` when no such character exists."""
    for m in _NON_ASCII.finditer(text):
        if not _is_separator(m.group()):
            cut = m.start()
            while cut > 0 and text[cut - 1] in _ASCII_ALNUM_CI:
                cut -= 1
            return cut
    return len(text)


def _resume_point(text: str, cut: int, n: int) -> int:
    """Start of the ``n-1``-th last token before ``cut``: the earliest start of an
    occurrence that is not inside ``text[:cut]`` but may begin there."""
    if n == 1:
        return cut
    lookback = 512
    while True:
        lo = max(0, cut - lookback)
        starts = [m.start() for m in _ASCII_TOKEN_CI.finditer(text, lo, cut)]
        if starts and lo > 0 and starts[0] == lo:
            starts = starts[1:]  # may be the tail of a longer token
        if len(starts) >= n - 1:
            return starts[-(n - 1)]
        if lo == 0:
            return 0
        lookback *= 4


@functools.lru_cache(maxsize=256)
def _rest_of(tokens: tuple[str, ...]) -> re.Pattern[str]:
    """The phrase after its first token: separators, then each further token, then no
    token character (a query's snippets all use the same one)."""
    return re.compile("".join(f"[^a-z0-9]+{t}" for t in tokens[1:]) + "(?![a-z0-9])")


@functools.lru_cache(maxsize=256)
def _is_ascii_query(tokens: tuple[str, ...]) -> bool:
    return all(_ASCII_TOKEN.fullmatch(t) for t in tokens)


def _ascii_candidates(text: str, tokens: Sequence[str]) -> Iterator[tuple[int, int]]:
    """The occurrences, in order, of the phrase as ASCII runs: the first token found by
    ``str.find`` with no ``[a-z0-9]`` beside it, a regex for the rest (any other
    characters between). Exact where every non-ASCII character separates tokens (see
    ``_clean_prefix_end``); elsewhere candidates for ``_first_beside_dirty_runs``."""
    low = text.lower()
    if len(low) != len(text):  # a non-ASCII separator with a longer lowercase form
        low = text.translate(_ASCII_LOWER)
    first, size = tokens[0], len(tokens[0])
    rest = _rest_of(tuple(tokens))
    pos = low.find(first)
    while pos >= 0:
        end = pos + size
        if (pos == 0 or low[pos - 1] not in _ASCII_ALNUM) and (
            end == len(low) or low[end] not in _ASCII_ALNUM
        ):
            m = rest.match(low, end)
            if m:
                yield pos, m.end()
        pos = low.find(first, pos + 1)


def _find_ascii(text: str, tokens: Sequence[str]) -> tuple[int, int] | None:
    """First occurrence in text whose tokens are ASCII runs (``_ascii_candidates``)."""
    return next(_ascii_candidates(text, tokens), None)


def _is_token_char(ch: str) -> bool:
    return ch in _ASCII_ALNUM_CI or (not ch.isascii() and not _is_separator(ch))


_DIRTY_DENSITY: Final = 4


def _too_dense(stretch: str) -> bool:
    """Over ``1 / _DIRTY_DENSITY`` of ``stretch`` non-ASCII, counted as its UTF-8 bytes
    beyond one per character (at least one per non-ASCII character)."""
    excess = len(stretch.encode("utf-8", "surrogatepass")) - len(stretch)
    return excess * _DIRTY_DENSITY > len(stretch)


class _DirtyRuns:
    """The *dirty runs* of a text, found left to right as far as asked: maximal runs of
    token characters holding a non-ASCII one. Tokens never cross a separator, so the
    analyzer's tokens are the ASCII runs outside dirty runs (lowercased) and, inside
    each, the analyzer's tokens of that run alone. Visiting a non-ASCII character costs
    about what the analyzer spends on four to eight characters, so a stretch dense in
    them (``_too_dense``) is left to the analyzer."""

    __slots__ = ("_text", "ends", "scanned", "starts")

    def __init__(self, text: str) -> None:
        self._text = text
        self.starts: list[int] = []
        self.ends: list[int] = []
        self.scanned = 0  # every run starting before this is known

    def extend(self, limit: int) -> list[str] | None:
        """Find the runs starting before ``limit``; the new runs' texts, or None for a
        stretch too dense to visit (judged at its first non-ASCII token character: a
        stretch whose non-ASCII characters all separate is only scanned)."""
        text, first = self._text, self.scanned
        found: list[str] = []
        for m in _NON_ASCII.finditer(text, first, max(limit, first)):
            if _is_separator(m.group()):
                continue
            p = m.start()
            if self.ends and p < self.ends[-1]:
                continue
            if not found and _too_dense(text[first:limit]):
                return None
            a, b = p, p + 1
            while a > 0 and _is_token_char(text[a - 1]):
                a -= 1
            while b < len(text) and _is_token_char(text[b]):
                b += 1
            self.starts.append(a)
            self.ends.append(b)
            found.append(text[a:b])
        self.scanned = max(self.scanned, limit, self.ends[-1] if self.ends else 0)
        return found

    def touch(self, start: int, end: int) -> bool:
        """Whether a known run overlaps ``start..end`` (runs are disjoint, in order)."""
        i = bisect.bisect_left(self.starts, end) - 1
        return i >= 0 and self.ends[i] > start


_UNSETTLED: Final = (-1, -1)


def _first_beside_dirty_runs(text: str, tokens: list[str]) -> tuple[int, int] | None:
    """``first_occurrence`` of an ASCII phrase (``_is_ascii_query``) where non-ASCII
    token characters are few, or ``_UNSETTLED``.

    While no dirty run (``_DirtyRuns``) up to an occurrence's end holds a token of the
    phrase, every occurrence up to there is of ASCII runs, consecutive tokens: the
    first ASCII candidate that no dirty run touches (a run between its tokens is a token
    between them; one beside a token makes it part of a longer one). A run holding a
    phrase token, or a stretch dense in non-ASCII characters, leaves it to the
    analyzer."""
    wanted = set(tokens)
    runs = _DirtyRuns(text)

    def harmless(limit: int) -> bool:
        found = runs.extend(limit)
        return found is not None and not (
            found and wanted.intersection(ANALYZER.analyze(" ".join(found)))
        )

    for start, end in _ascii_candidates(text, tokens):
        if not harmless(min(len(text), end + 1)):
            return _UNSETTLED
        if not runs.touch(start, end):
            return start, end
    return None if harmless(len(text)) else _UNSETTLED


def _find_phrase(words: list[str], tokens: list[str], usable: int) -> int:
    """Index of the first ``i`` with ``words[i:i+len(tokens)] == tokens`` and
    ``i + len(tokens) <= usable``, else -1."""
    n = len(tokens)
    i = -1
    while True:
        try:
            i = words.index(tokens[0], i + 1, max(0, usable - n + 1))
        except ValueError:
            return -1
        if words[i : i + n] == tokens:
            return i


def _find_analyzed(text: str, tokens: list[str], base: int) -> tuple[int, int] | None:
    """First occurrence at or after ``base`` (a token start or a separator boundary) by
    the analyzer itself, window by window.

    Cost follows the position of the first occurrence, not the document's length. A
    window may cut its last token, so an occurrence must end before it; the next window
    starts at the first token an unseen occurrence could start with (which re-reads the
    cut token whole). Offsets are code points.
    """
    n = len(tokens)
    width = _WINDOW
    while True:
        complete = base + width >= len(text)
        toks = ANALYZER.pre_tokenize(text[base:] if complete else text[base : base + width]).tokens
        usable = len(toks) if complete else len(toks) - 1
        i = _find_phrase([t.text for t in toks], tokens, usable)
        if i >= 0:
            first, last = toks[i], toks[i + n - 1]
            if last.position - first.position != n - 1:
                return None
            return base + first.char_offset_from, base + last.char_offset_to
        if complete:
            return None
        resume = max(usable - (n - 1), 0)
        step = toks[resume].char_offset_from if resume < len(toks) else width
        if step <= 0:  # one token (or phrase) wider than the window
            width *= _WINDOW_GROWTH
        else:
            base += step


def first_occurrence(text: str, tokens: Sequence[str]) -> tuple[int, int] | None:
    """Code-point span of the first occurrence of the token phrase in ``text``.

    Exact with respect to the index analyzer, and fast on the usual text: the longest
    prefix whose token characters are all ASCII (``_clean_prefix_end``; all of an ASCII
    text) is searched with ``str`` methods; only an occurrence not inside it makes the
    analyzer tokenize, from the last ``n-1`` tokens of that prefix on. ``None`` when there
    is no occurrence or offsets look wrong — the snippet then starts at the beginning
    instead of failing the search.
    """
    if not text.isascii():
        text = without_surrogates(text)  # same length: offsets stay valid for the caller
    return _first_in_valid(text, tokens)


def _first_in_valid(text: str, tokens: Sequence[str]) -> tuple[int, int] | None:
    """``first_occurrence`` of a text without lone surrogates (text decoded from UTF-8,
    as the index stores it, has none)."""
    if not tokens:
        return None
    wanted = list(tokens)
    ascii_query = _is_ascii_query(tuple(wanted))
    if text.isascii():
        return _find_ascii(text, wanted) if ascii_query else None
    if ascii_query:
        found = _first_beside_dirty_runs(text, wanted)
        if found != _UNSETTLED:
            return found
    cut = _clean_prefix_end(text)
    if ascii_query:
        span = _find_ascii(text[:cut], wanted)
        if span is not None:
            return span
    if cut == len(text):
        return None
    span = _find_analyzed(text, wanted, _resume_point(text, cut, len(wanted)))
    if span is None or not 0 <= span[0] < span[1] <= len(text):
        return None
    return span


def mark_first_occurrence(text: str, tokens: Sequence[str]) -> str:
    """``text`` with ``MATCH_START``/``MATCH_END`` around the first phrase occurrence.

    Only the first span positions a snippet (SPEC §7.8 records the first marker), so
    later spans stay unmarked; the resulting snippet is the same.
    """
    return marked(text, first_occurrence(text, tokens))


def _located(text: str, tokens: list[str], mode: SearchMode) -> tuple[int, int] | None:
    """Where a hit's snippet goes: the first occurrence of the phrase; in ``words``
    mode, when the document does not hold the phrase, the earliest of its words."""
    span = _first_in_valid(text, tokens)
    if span is not None or mode == "phrase" or len(tokens) < 2:
        return span
    found = (_first_in_valid(text, [t]) for t in dict.fromkeys(tokens))
    return min((s for s in found if s is not None), default=None)


def event_hit(
    searcher: tantivy.Searcher,
    addr: Any,
    tokens: list[str],
    snippet_chars: int,
    mode: SearchMode = "phrase",
) -> EventHit:
    """The hit of the stored document at ``addr`` (a ``tantivy.DocAddress``), its snippet
    positioned where the query matched (``_located``)."""
    doc = searcher.doc(addr)
    session_id, type_, surface, seq, time = load_meta(doc)[:5]
    text = stored_text(doc)
    if len(text) <= snippet_chars:  # shown whole: where the phrase is does not matter
        snippet = snippet_of(text, None, snippet_chars)
    else:
        snippet = snippet_of(text, _located(text, tokens, mode), snippet_chars)
    return EventHit(
        session_id=session_id,
        seq=int(seq),
        type=type_,
        time=int(time),
        surface=cast(Surface, surface),
        snippet=snippet,
    )
