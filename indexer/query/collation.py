"""Sort keys that stand in for JavaScript ``localeCompare`` (ICU root collation).

Upstream orders sibling sessions and newest-first ties with ``localeCompare``. ICU root
compares case-insensitively first (whitespace < punctuation < symbols < digits < letters,
so ``a_b`` < ``a-b`` < ``ab``), then by case (lower before upper), then by code point.
For canonical lowercase UUID-like ids this is plain code-point order.
"""

from __future__ import annotations

import functools
import unicodedata

# CLDR root order of the ASCII punctuation and symbols.
_ASCII_ORDER = "_-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$"
_RANK = {c: i for i, c in enumerate(_ASCII_ORDER)}


def _primary(ch: str) -> tuple[int, int, str]:
    low = ch.casefold()
    if ch.isspace():
        return (0, ord(ch), "")
    if ch in _RANK:
        return (1, _RANK[ch], "")
    cat = unicodedata.category(ch)
    if cat.startswith("P"):
        return (1, 100 + ord(ch), "")
    if cat.startswith("S"):
        return (2, ord(ch), "")
    if cat.startswith("N"):
        return (3, int(unicodedata.digit(ch, 0)) if ch.isdigit() else ord(ch), "")
    base = unicodedata.normalize("NFKD", low)
    base = "".join(c for c in base if not unicodedata.combining(c)) or low
    return (4, 0, base)


@functools.lru_cache(maxsize=1 << 16)
def locale_key(value: str) -> tuple[tuple[tuple[int, int, str], ...], tuple[int, ...], str]:
    """A sort key approximating ``a.localeCompare(b)`` for session ids (a pure function
    of the id, so it is remembered: every listing sorts the same ids again)."""
    primary = tuple(_primary(c) for c in value)
    tertiary = tuple(0 if c == c.lower() else 1 for c in value)
    return (primary, tertiary, value)
