"""SPEC §7.8 snippets: the example table verbatim, plus a walk-by-code-point reference."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from indexer.store.tantivy.snippet import (
    ELLIPSIS,
    MATCH_END,
    MATCH_START,
    make_snippet,
    marked,
    snippet_of,
)

JS_WS = (
    "\u0009\u000a\u000b\u000c\u000d\u0020\u00a0\u1680\u2000\u2001\u2002\u2003\u2004"
    "\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)


def _marked(s: str) -> str:
    """The table's notation: ``[``/``]`` stand for the markers."""
    return s.replace("[", MATCH_START).replace("]", MATCH_END)


def reference_snippet(marked: str, max_chars: int) -> str:
    """SPEC §7.8 transcribed literally: a code-point walk, then steps 2-7."""
    out: list[str] = []
    match_start: int | None = None
    for ch in marked:
        if ch == MATCH_START:
            if match_start is None:
                match_start = len(out)
        elif ch == MATCH_END:
            pass
        elif ch in JS_WS:
            if out and out[-1] != " ":
                out.append(" ")
        else:
            out.append(ch)
    if out and out[-1] == " ":
        out.pop()
    ms = match_start or 0
    n = len(out)
    if n <= max_chars:
        return "".join(out)
    if max_chars == 1:
        return ELLIPSIS
    m = min(ms, n - 1)
    start = max(0, m - max_chars // 3)
    prefix = ELLIPSIS if start > 0 else ""
    suffix = ELLIPSIS
    content = max_chars - len(prefix) - len(suffix)
    if content < 1:
        start = m
        suffix = ""
        content = max_chars - len(prefix)
    elif m >= start + content:
        start = m - content + 1
    end = min(n, start + content)
    if end == n:
        suffix = ""
        content = max_chars - len(prefix)
        start = max(0, end - content)
    end = min(n, start + content)
    return prefix + "".join(out[start:end]) + suffix


LONG = "We traced the flaky parser test.\n\nThe [needle] was a stale cache entry in the tokenizer."

TABLE = [
    ("  short\ntext  ", 20, "short text"),
    ("abcde[f]", 1, "…"),
    ("abcdefghij", 5, "abcd…"),
    ("ab[c]defghij", 5, "…bcd…"),
    ("ab[c]defghij", 3, "…c…"),
    ("abcde[f]", 2, "…f"),
    ("abcde[f]", 5, "…cdef"),
    ("  x—[café]\n y  ", 20, "x—café y"),
    (LONG, 30, "…test. The needle was a stale…"),
    (LONG, 12, "…The needle…"),
    ("[needle] at the very start of a long document text", 20, "needle at the very …"),
]


@pytest.mark.parametrize(("marked", "max_chars", "expected"), TABLE)
def test_spec_table_rows_are_reproduced_exactly(marked: str, max_chars: int, expected: str) -> None:
    assert make_snippet(_marked(marked), max_chars) == expected
    assert reference_snippet(_marked(marked), max_chars) == expected


def test_only_js_whitespace_collapses() -> None:
    # U+0085 and U+001F are whitespace to Python but not to JavaScript; U+FEFF is the reverse.
    assert make_snippet("a\u0085b\u001fc", 20) == "a\u0085b\u001fc"
    assert make_snippet("\ufeffa\ufeff\ufeffb\ufeff", 20) == "a b"


def test_match_start_after_whitespace_run_and_at_end() -> None:
    assert make_snippet("a  " + MATCH_START + " b" + MATCH_END, 20) == "a b"
    assert make_snippet("abcdef " + MATCH_START + MATCH_END, 3) == "…ef"
    assert make_snippet("   " + MATCH_START + "x" + MATCH_END + "   ", 5) == "x"


def test_without_markers_the_window_starts_at_the_beginning() -> None:
    assert make_snippet("abcdefghij", 5) == "abcd…"
    assert make_snippet("", 5) == ""


MARKERS = (MATCH_START, MATCH_END)
_ALPHABET = st.sampled_from(
    [*"ab xé—😀", "\n", "\t", "\u00a0", "\u3000", "\ufeff", "\u0085", "\u001f", *MARKERS]
)


@settings(max_examples=2000, deadline=None)
@given(st.text(alphabet=_ALPHABET, max_size=60), st.integers(min_value=1, max_value=30))
def test_matches_the_literal_walk(marked: str, max_chars: int) -> None:
    got = make_snippet(marked, max_chars)
    assert got == reference_snippet(marked, max_chars)
    assert len(got) <= max_chars
    assert "\n" not in got


@settings(max_examples=1000, deadline=None)
@given(st.text(alphabet=_ALPHABET.filter(lambda c: c not in MARKERS), max_size=40), st.data())
def test_a_text_no_longer_than_the_budget_shows_the_same_wherever_the_match_is(
    text: str, data: st.DataObject
) -> None:
    """Hits of such texts are cut unmarked (``highlight.event_hit``): the marked text's
    snippet must be the unmarked one's."""
    max_chars = data.draw(st.integers(min_value=max(1, len(text)), max_value=45))
    start = data.draw(st.integers(min_value=0, max_value=len(text)))
    end = data.draw(st.integers(min_value=start, max_value=len(text)))
    marked = text[:start] + MATCH_START + text[start:end] + MATCH_END + text[end:]
    assert make_snippet(marked, max_chars) == make_snippet(text, max_chars)


_TEXT_ALPHABET = _ALPHABET.filter(lambda c: c not in MARKERS)


@settings(max_examples=1500, deadline=None)
@given(
    st.lists(
        st.tuples(_TEXT_ALPHABET, st.integers(min_value=1, max_value=40)), min_size=1, max_size=60
    ),
    st.integers(min_value=1, max_value=30),
    st.data(),
)
def test_a_long_text_is_cut_around_its_match_as_the_whole_text_is(
    runs: list[tuple[str, int]], max_chars: int, data: st.DataObject
) -> None:
    """``snippet_of`` reads only the text around the match (long texts of runs of one
    character: long whitespace runs make it widen its reach); the snippet must be the
    whole marked text's."""
    text = "".join(ch * n for ch, n in runs)
    starts = [i for i, ch in enumerate(text) if ch not in JS_WS]
    if not starts or data.draw(st.booleans()):
        span = None
    else:
        start = data.draw(st.sampled_from(starts))
        span = (start, data.draw(st.integers(min_value=start + 1, max_value=len(text))))
    assert snippet_of(text, span, max_chars) == make_snippet(marked(text, span), max_chars)


@settings(max_examples=2000, deadline=None)
@given(st.text(alphabet=_TEXT_ALPHABET, max_size=60), st.integers(1, 30), st.data())
def test_a_match_is_placed_without_inserting_markers_as_the_marked_walk_places_it(
    text: str, max_chars: int, data: st.DataObject
) -> None:
    """``snippet_of`` places the match by the span alone (no markers inserted), at any
    span start, whitespace included (which hits never have)."""
    if not text or data.draw(st.booleans()):
        span = None
    else:
        start = data.draw(st.integers(0, len(text) - 1))
        span = (start, data.draw(st.integers(start + 1, len(text))))
    expected = reference_snippet(marked(text, span), max_chars)
    assert snippet_of(text, span, max_chars) == expected


@pytest.mark.parametrize("max_chars", [1, 2, 3, 12, 240])
def test_whitespace_runs_around_a_match_far_into_a_long_text(max_chars: int) -> None:
    """Runs of whitespace far longer than the first reach on both sides of the match,
    and a U+FEFF run (JS whitespace, not Python's) that must not count as shown."""
    before = "a" * 5_000 + " \n\t\u00a0" * 700 + "\ufeff" * 900 + "xy "
    after = " \u3000 " * 900 + "\ufeff" * 700 + "b" * 5_000
    text = before + "needle" + after
    span = (len(before), len(before) + 6)
    whole = make_snippet(marked(text, span), max_chars)
    assert snippet_of(text, span, max_chars) == whole
    assert "needle"[: max(1, max_chars - 2)] in whole or max_chars <= 2
