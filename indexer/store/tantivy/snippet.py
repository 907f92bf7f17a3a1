"""Search-hit snippets (SPEC §7.8), pure string logic (no Tantivy: the FTS5 benchmark
baseline builds its snippets with it too).

The index marks the phrase occurrences of a document's text with ``MATCH_START``
(U+FDD0) before and ``MATCH_END`` (U+FDD1) after each highlight span; ``make_snippet``
turns that marked text into the model-facing snippet. Document text never contains
the markers itself: the index replaces them with U+FFFD before storing (SPEC §7.4).

Step 1 is specified as a walk over code points; it is computed here with C-speed
``str`` operations instead (one trim-and-collapse pass), because documents can be
hundreds of kilobytes and a snippet is built for every returned hit. The result is the
same: dropped markers never change whether the output "ends with a space", so the
normalized text is the marker-free text trimmed and collapsed, and ``matchStart`` is
where the first marker lands in it. The tests check this against a literal walk.

A hit's snippet shows at most ``max_chars`` characters around the match, so for a long
document ``snippet_of`` hands ``make_snippet`` only the text around it: enough
characters on each side that the window never reaches a cut (``_WINDOW_GROWTH``), which
makes the result the same as over the whole text, without passes over all of it.
"""

from __future__ import annotations

import re
from typing import Final

from indexer.surface.jstext import JS_WHITESPACE, JS_WHITESPACE_CLASS

MATCH_START: Final = "\ufdd0"
"""Inserted before every highlight span."""
MATCH_END: Final = "\ufdd1"
"""Inserted after every highlight span."""
ELLIPSIS: Final = "\u2026"

_WS_RUN: Final = re.compile(JS_WHITESPACE_CLASS + "+")
def _splits_as_js(text: str) -> bool:
    """Whether Python's ``str.split()`` whitespace is the JS set over ``text``: unless the
    text holds one of the characters where the two disagree (SPEC §13.1: U+001C-U+001F
    and U+0085 are Python's only, U+FEFF is JS only). One ``in`` per character is a
    memchr-speed scan, far cheaper than a regex class."""
    return not (
        "\x1c" in text
        or "\x1d" in text
        or "\x1e" in text
        or "\x1f" in text
        or "\x85" in text
        or "\ufeff" in text
    )


def _collapse(text: str) -> str:
    """Trim ``WS`` and replace each ``WS`` run by one space (``str.split()`` where it is
    the JS set, ``_splits_as_js``)."""
    if _splits_as_js(text):
        return " ".join(text.split())
    return _WS_RUN.sub(" ", text.strip(JS_WHITESPACE))


def _strip_markers(text: str) -> str:
    return text.replace(MATCH_START, "").replace(MATCH_END, "")


_WHOLE_BELOW_PER_CHAR: Final = 4
"""A text up to this many times ``max_chars`` (plus ``_WHOLE_BELOW_EXTRA``) is cut whole."""
_WHOLE_BELOW_EXTRA: Final = 64
_WINDOW_GROWTH: Final = 2


def _shown_chars_at_least(text: str) -> int:
    """A lower bound of the characters of ``text`` that are not JS whitespace: Python's
    ``str.split`` whitespace is the JS set but for U+FEFF (JS only) and a few controls
    (Python only, which this undercounts)."""
    return len("".join(text.split())) - text.count("\ufeff")


def snippet_of(text: str, span: tuple[int, int] | None, max_chars: int) -> str:
    """``make_snippet`` of ``text`` marked at ``span`` (no markers in ``text``; the span
    starts at a token character, never whitespace), over the text around the span only.

    Exact: ``make_snippet``'s window starts at most ``max_chars`` normalized characters
    before the match and ends at most ``max_chars`` after it, so a cut with more than
    ``max_chars + 1`` shown characters between it and the match (``max_chars + 2`` after)
    is never reached: the shown characters are the same, and so are both ellipses.
    Whitespace at a cut normalizes to at most one space the window never shows either.
    """
    n = len(text)
    if span is None:
        return _window(_collapse(text), 0, max_chars)
    if n <= _WHOLE_BELOW_PER_CHAR * max_chars + _WHOLE_BELOW_EXTRA:
        return _unmarked(text, span[0], max_chars)
    start = span[0]
    need_before, need_after = max_chars + 2, max_chars + 3
    reach = 2 * max_chars + _WHOLE_BELOW_EXTRA
    lo = max(0, start - reach)
    while lo > 0 and _shown_chars_at_least(text[lo:start]) < need_before:
        lo = max(0, start - (start - lo) * _WINDOW_GROWTH)
    hi = min(n, start + reach)
    while hi < n and _shown_chars_at_least(text[start:hi]) < need_after:
        hi = min(n, start + (hi - start) * _WINDOW_GROWTH)
    return _unmarked(text[lo:hi], start - lo, max_chars)


def _unmarked(text: str, start: int, max_chars: int) -> str:
    """``make_snippet`` of ``text`` with a match marked at ``start`` (a character that is
    not ``WS``), without inserting the markers: the walk of §7.8 step 1 reaches the
    marker with the text before it normalized but for its trailing run, which it has
    turned into one space unless nothing was shown yet; the normalized text is the
    marker-free text's. Where ``str.split()`` is the JS split, the two sides are split
    once each and joined, a word cut by the match start glued back."""
    if not 0 <= start < len(text) or text[start] in JS_WHITESPACE:
        return make_snippet(marked(text, (start, start)), max_chars)
    before = text[:start]
    if not _splits_as_js(text):
        shown = len(_collapse(before))
        if shown and before[-1] in JS_WHITESPACE:
            shown += 1
        return _window(_collapse(text), shown, max_chars)
    head, tail = before.split(), text[start:].split()
    if not head:
        return _window(" ".join(tail), 0, max_chars)
    shown = sum(map(len, head)) + len(head) - 1
    if before[-1] in JS_WHITESPACE:
        return _window(" ".join(head + tail), shown + 1, max_chars)
    head[-1] += tail[0]  # the match starts inside a word: no space between them
    return _window(" ".join(head + tail[1:]), shown, max_chars)


def marked(text: str, span: tuple[int, int] | None) -> str:
    """``text`` with the markers around ``span`` (the first phrase occurrence)."""
    if span is None:
        return text
    start, end = span
    return text[:start] + MATCH_START + text[start:end] + MATCH_END + text[end:]


def make_snippet(marked_text: str, max_chars: int) -> str:
    """Build the SPEC §7.8 snippet of ``marked_text`` in at most ``max_chars`` code points.

    Order of operations, exactly as §7.8: (1) normalize whitespace with the JS ``WS``
    set, drop the markers and remember where the first ``MATCH_START`` landed
    (``matchStart``, default 0); (2) short text is returned whole; (3) ``max_chars == 1``
    is just the ellipsis; (4-7) otherwise a window starts a third of the budget before
    the match, with ``…`` on each cut side. Only the first span matters for the window,
    so callers may mark just the first occurrence.

    The normalized text does not depend on where the markers were, only the window
    does; so a text no longer than ``max_chars`` (nor, then, its normalized form) is
    returned normalized without locating the match.
    """
    if len(marked_text) <= max_chars:
        return _collapse(_strip_markers(marked_text))
    first = marked_text.find(MATCH_START)
    if first < 0:
        out = _collapse(_strip_markers(marked_text))
        match_start = 0
    else:
        # Collapse once with the first marker kept as an ordinary character, then undo
        # what it changed: it separated two whitespace runs the walk would have merged.
        kept = (
            _strip_markers(marked_text[:first])
            + MATCH_START
            + _strip_markers(marked_text[first + 1 :])
        )
        collapsed = _collapse(kept)
        match_start = collapsed.index(MATCH_START)
        left, right = collapsed[:match_start], collapsed[match_start + 1 :]
        if (not left or left.endswith(" ")) and right.startswith(" "):
            right = right[1:]
        out = left + right
        if out.endswith(" "):
            out = out[:-1]
    return _window(out, match_start, max_chars)


def _window(out: str, match_start: int, max_chars: int) -> str:
    """Steps 2-7 of §7.8 over the normalized text ``out`` and its ``matchStart``."""
    n = len(out)
    limit = max_chars
    if n <= limit:
        return out
    if limit == 1:
        return ELLIPSIS
    m = min(match_start, n - 1)
    start = max(0, m - limit // 3)
    prefix = ELLIPSIS if start > 0 else ""
    suffix = ELLIPSIS
    content = limit - len(prefix) - len(suffix)
    if content < 1:
        start = m
        suffix = ""
        content = limit - len(prefix)
    elif m >= start + content:
        start = m - content + 1
    end = min(n, start + content)
    if end == n:
        suffix = ""
        content = limit - len(prefix)
        start = max(0, end - content)
    end = min(n, start + content)
    return prefix + out[start:end] + suffix
