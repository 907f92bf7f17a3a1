"""Search-hit snippets (SPEC §7.8), pure string logic.

The index marks the phrase occurrences of a document's text with ``MATCH_START``
(U+FDD0) before and ``MATCH_END`` (U+FDD1) after each highlight span; ``make_snippet``
turns that marked text into the model-facing snippet. Document text never contains
the markers itself: the index replaces them with U+FFFD before storing (SPEC §7.4).

The normalization of step 1 is specified as a walk over code points; it is computed
here with C-speed regex and ``str`` operations instead, because documents can be
hundreds of kilobytes and a snippet is built for every returned hit. The result is the
same: dropped markers never change whether the output "ends with a space", so
collapsing whitespace runs of the marker-free text is equivalent to the walk.
"""

from __future__ import annotations

import re
from typing import Final

from indexer.jstext import JS_WHITESPACE, JS_WHITESPACE_CLASS

MATCH_START: Final = "\ufdd0"
"""Inserted before every highlight span."""
MATCH_END: Final = "\ufdd1"
"""Inserted after every highlight span."""
ELLIPSIS: Final = "\u2026"

_WS_RUN: Final = re.compile(JS_WHITESPACE_CLASS + "+")
_MARKERS: Final = str.maketrans({MATCH_START: None, MATCH_END: None})


def _collapse_walk(text: str) -> str:
    """Step 1 without the final trailing-space drop.

    Leading whitespace is dropped (a space is only appended to non-empty output) and
    every other whitespace run becomes one U+0020, a trailing run included.
    """
    return _WS_RUN.sub(" ", text.lstrip(JS_WHITESPACE))


def make_snippet(marked_text: str, max_chars: int) -> str:
    """Build the SPEC §7.8 snippet of ``marked_text`` in at most ``max_chars`` code points.

    Order of operations, exactly as §7.8: (1) normalize whitespace with the JS ``WS``
    set, drop the markers and remember where the first ``MATCH_START`` landed
    (``matchStart``, default 0); (2) short text is returned whole; (3) ``max_chars == 1``
    is just the ellipsis; (4-7) otherwise a window starts a third of the budget before
    the match, with ``…`` on each cut side. Only the first span matters for the window,
    so callers may mark just the first occurrence.
    """
    first = marked_text.find(MATCH_START)
    if first < 0:
        match_start = 0
        out = _collapse_walk(marked_text.translate(_MARKERS))
    else:
        before = _collapse_walk(marked_text[:first].translate(_MARKERS))
        match_start = len(before)
        after = marked_text[first + 1 :].translate(_MARKERS)
        if before.endswith(" ") or not before:
            # The walk would not append a space here: output is empty or ends with one.
            after = after.lstrip(JS_WHITESPACE)
        out = before + _WS_RUN.sub(" ", after)
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
