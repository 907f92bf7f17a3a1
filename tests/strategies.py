"""Hypothesis strategies shared by the property tests."""

from __future__ import annotations

from hypothesis import strategies as st


def as_javascript(text: str) -> str:
    """``text`` as JavaScript holds it: a high and a low surrogate side by side are one
    astral character (JSON, whose ``\\ud83d\\ude00`` is one character, cannot tell
    them apart); any other surrogate is lone and stays."""
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


js_chars = st.characters() | st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)
"""Any code point, surrogates included (``st.characters()`` alone leaves them out)."""


def js_text(*, max_size: int | None = None) -> st.SearchStrategy[str]:
    """Any string a JavaScript host can send: lone surrogates (a stream delta cut
    mid-emoji) included."""
    return st.text(js_chars, max_size=max_size).map(as_javascript)
