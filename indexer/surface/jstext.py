"""JavaScript whitespace semantics (SPEC §0, §13.1).

Upstream trims, collapses and splits with JavaScript's ``String.prototype.trim`` and
regex ``\\s``: the ECMAScript WhiteSpace ∪ LineTerminator set. Python's argument-less
``str.strip()``/``str.split()``, ``str.isspace()`` and ``re`` ``\\s`` use a different set
(they include U+001C-U+001F and U+0085 and exclude U+FEFF), so every whitespace
operation that affects what the model sees goes through this module instead.
"""

from __future__ import annotations

import re
from typing import Final

JS_WHITESPACE: Final = (
    "\u0009\u000a\u000b\u000c\u000d\u0020\u00a0\u1680"
    "\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000\ufeff"
)
"""Exactly the SPEC §0 ``WS`` set, one character each."""

JS_WHITESPACE_CLASS: Final = (
    "[\\t\\n\\x0b\\x0c\\r \\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff]"
)
"""A ``re`` character class matching one ``WS`` character (use it where JS wrote ``\\s``)."""

_WS_RUN: Final = re.compile(JS_WHITESPACE_CLASS + "+")
_LONE_SURROGATE: Final = re.compile("[\ud800-\udfff]")


def js_trim(s: str) -> str:
    """Remove leading and trailing ``WS`` characters (JavaScript ``trim``).

    ``str.strip`` with an explicit character set strips exactly those characters, so
    this is the JS set and nothing else.
    """
    return s.strip(JS_WHITESPACE)


def js_collapse(s: str) -> str:
    """Trim, then replace every inner run of ``WS`` characters by one U+0020 space."""
    return _WS_RUN.sub(" ", js_trim(s))


def js_split(s: str) -> list[str]:
    """Split on runs of ``WS`` characters; never yields empty strings."""
    trimmed = js_trim(s)
    if not trimmed:
        return []
    return _WS_RUN.split(trimmed)


def to_well_formed(s: str) -> str:
    """``s`` with each lone UTF-16 surrogate replaced by U+FFFD (JavaScript's
    ``String.prototype.toWellFormed``): what a transport that carries text, not JSON,
    sends (a terminal, an MCP text block). Python holds a surrogate pair as one
    character, so every surrogate left in a ``str`` is a lone one."""
    return _LONE_SURROGATE.sub("\ufffd", s) if _LONE_SURROGATE.search(s) else s
