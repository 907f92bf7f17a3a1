"""The title an importer gives a session from its first prompt.

dsh's title service titles a session by its first prompt (SPEC §4, ``fallback``): the
text cleaned of control and bidi characters, whitespace collapsed, its first five
words, at most 40 UTF-8 bytes. An importer does the same for a log that names no title
of its own, with one rule first: **the words are redacted before anything is cut**. A
secret cut at the 40th byte no longer matches the rule that finds it whole (a GitHub
token keeps 24 of its 36 random characters), so the title is cut from the redacted
words, never redacted after the cut. This holds in every ``--redact-secrets`` mode: a
title is text sessionq derives, the mode governs how the logs' own text is shown, and a
stored title event must not change with the mode a data dir is later read in.

Lone UTF-16 surrogates (a JavaScript string cut mid-character) count three bytes, as
the U+FFFD a UTF-8 encoder writes for them does, and stay in the title as they were.
"""

from __future__ import annotations

import re
from itertools import islice
from typing import Final

from indexer.redact.policy import detector

__all__ = ["fallback_title"]

_TITLE_WORDS: Final = 5
_TITLE_BYTES: Final = 40
_REDACTED_WORDS: Final = 16
"""Words redacted around the title's five: a rule that needs a word after a secret (its
keyword, an assignment) still sees it."""
_WRAPPER: Final = re.compile(r"\s*<[A-Za-z_][\w-]*>")  # an injected context block
_CONTROLS: Final = re.compile(r"[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_WORD: Final = re.compile(r"\S+")


def _words(text: str, count: int) -> list[str]:
    """The first ``count`` words of ``text``, found lazily (a prompt can be megabytes)."""
    return [m.group() for m in islice(_WORD.finditer(text), count)]


def _cut(text: str, size: int) -> str:
    """``text`` cut to at most ``size`` UTF-8 bytes at a character boundary."""
    used = 0
    for i, char in enumerate(text):
        used += 1 if char < "\x80" else len(char.encode("utf-8", "surrogatepass"))
        if used > size:
            return text[:i]
    return text


def fallback_title(text: str) -> str | None:
    """The title of a first prompt (module docstring); ``None`` for an empty text or
    one that opens with a tag (``<environment_context>``, ``<command-name>``: context
    the agent injected)."""
    if _WRAPPER.match(text):
        return None
    head = " ".join(_words(_CONTROLS.sub(" ", text[: 1 << 16]), _REDACTED_WORDS))
    if not head:
        return None
    redacted, _found = detector().redact(head)
    title = _cut(" ".join(_words(redacted, _TITLE_WORDS)), _TITLE_BYTES).rstrip()
    return title or None
