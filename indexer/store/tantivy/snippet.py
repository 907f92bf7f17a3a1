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
_DIFFERENT_WS: Final = ("\x1c", "\x1d", "\x1e", "\x1f", "\x85", "\ufeff")
"""Where Python's ``str.split()`` whitespace and the JS set disagree (SPEC §13.1)."""


def _collapse(text: str) -> str:
    """Trim ``WS`` and replace each ``WS`` run by one space.

    ``str.split()`` is the fast path; it splits on exactly the JS set unless the text
    holds one of ``_DIFFERENT_WS``.
    """
    if not any(c in text for c in _DIFFERENT_WS):
        return " ".join(text.split())
    return _WS_RUN.sub(" ", text.strip(JS_WHITESPACE))


def _strip_markers(text: str) -> str:
    return text.replace(MATCH_START, "").replace(MATCH_END, "")


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
