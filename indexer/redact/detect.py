"""Finding secrets in one text and replacing them by markers.

Order of operations for a text:

1. keyword prefilter: one Aho-Corasick pass over the lower-cased text finds every rule
   keyword it holds; a rule runs only when one of its keywords occurs (most texts hold
   none: no regex runs);
2. each active rule's patterns run over the text, or, for an anchored rule (its matches
   start with a keyword), only at the keywords' occurrences; a match's secret is its
   ``group``, extended over the rule's ``extend`` characters (and back over its
   ``before`` ones), and it is kept only if its edges do not touch a letter or digit
   (``edges = "word"``; a JSON escape such as ``\\n`` counts as a boundary), its entropy
   is at least the rule's, its ``check`` holds and no ``allow`` pattern matches it;
3. overlaps: specific rules first, then generic ones; a secret overlapping one kept
   already is dropped;
4. every kept secret is replaced by ``[REDACTED:<rule id>]``.

The marker holds no quote, backslash or control character, so a redacted JSON string
stays valid JSON text, and no rule matches a marker: redacting twice is redacting once.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Final

import ahocorasick

from indexer.redact.rules import Rule, load_rules

__all__ = ["Detector", "Finding", "marker", "shannon_entropy"]

MIN_CHARS: Final = 8
"""No rule's secret is shorter: a shorter text is returned as it is, unscanned."""
_ESCAPES: Final = frozenset("nrtbfu\"'/")
BEFORE_MAX: Final = 32
"""A rule's ``before`` characters are swallowed this far back at most."""
NAMES_KEPT: Final = 4096
"""Member names whose test is remembered (``names_secret``)."""


def marker(kind: str) -> str:
    return f"[REDACTED:{kind}]"


def shannon_entropy(text: str) -> float:
    """Bits per character of ``text``'s character distribution."""
    n = len(text)
    if n == 0:
        return 0.0
    return -sum(c / n * math.log2(c / n) for c in Counter(text).values())


@dataclass(frozen=True, slots=True)
class Finding:
    start: int
    end: int
    kind: str


def _touches(text: str, start: int, end: int) -> bool:
    """Whether the span is glued to a letter or digit on either side (an escape
    ``\\n`` before it is a boundary: JSON text inside a string)."""
    escaped = start > 1 and text[start - 2] == "\\" and text[start - 1] in _ESCAPES
    if start > 0 and text[start - 1].isalnum() and not escaped:
        return True
    return end < len(text) and text[end].isalnum()


class Detector:
    """The compiled rule set and its keyword prefilter (one per process: ``detector()``)."""

    def __init__(self, rules: tuple[Rule, ...] | None = None) -> None:
        self.rules = load_rules() if rules is None else rules
        by_keyword: dict[str, set[int]] = {}
        for i, rule in enumerate(self.rules):
            for keyword in rule.keywords:
                by_keyword.setdefault(keyword, set()).add(i)
        self._automaton: Any = ahocorasick.Automaton()
        for keyword, indices in by_keyword.items():
            self._automaton.add_word(keyword, (len(keyword), frozenset(indices)))
        self._automaton.make_automaton()
        self._name_keywords = tuple({k for r in self.rules if r.generic for k in r.keywords})
        self._names: dict[str, bool] = {}  # member names repeat in every event

    def keyword_spans(self, lowered: str) -> list[tuple[int, int]]:
        """The (start, end) offsets of every rule keyword's occurrences in ``lowered`` (a
        text lower-cased already: the keywords are): where none occurs, no rule can find
        a secret (every rule runs only on its keywords)."""
        return [(end - value[0] + 1, end + 1) for end, value in self._automaton.iter(lowered)]

    def names_secret(self, name: str) -> bool:
        """Whether ``name`` holds a keyword of a generic rule (an object member named so
        is tested as an assignment, ``indexer.redact.values``)."""
        says = self._names.get(name)
        if says is None:
            low = name.lower()
            says = any(k in low for k in self._name_keywords)
            if len(self._names) < NAMES_KEPT:
                self._names[name] = says
        return says

    def _active(self, text: str) -> list[tuple[Rule, list[int] | None]]:
        """The rules to run, specific ones first (their secrets win overlaps with a generic
        rule's), each with the keyword starts it is anchored at (None: scan the text)."""
        low = text.lower()
        aligned = len(low) == len(text)  # lower-casing a few letters changes the length
        starts: dict[int, set[int]] = {}
        for end, (length, indices) in self._automaton.iter(low):
            for i in indices:
                starts.setdefault(i, set()).add(end - length + 1)
        active = sorted(starts, key=lambda i: (self.rules[i].generic, self.rules[i].id))
        return [
            (self.rules[i], sorted(starts[i]) if self.rules[i].anchored and aligned else None)
            for i in active
        ]

    @staticmethod
    def _matches(
        pattern: re.Pattern[str], text: str, at: list[int] | None
    ) -> Iterable[re.Match[str]]:
        if at is None:
            yield from pattern.finditer(text)
            return
        after = 0
        for start in at:
            if start < after:
                continue
            match = pattern.match(text, start)
            if match is not None:
                after = match.end()
                yield match

    def _candidates(self, rule: Rule, text: str, at: list[int] | None) -> Iterator[Finding]:
        for pattern in rule.patterns:
            for match in self._matches(pattern, text, at):
                start, end = match.span(rule.group if pattern.groups >= rule.group else 0)
                if start < 0 or start == end:
                    continue
                if rule.before is not None:
                    floor = max(0, start - BEFORE_MAX)
                    while start > floor and rule.before.fullmatch(text[start - 1]):
                        start -= 1
                if rule.extend is not None:
                    more = rule.extend.match(text, end)
                    if more is not None:
                        end = more.end()
                if rule.word_edges and _touches(text, start, end):
                    continue
                secret = text[start:end]
                if rule.entropy and shannon_entropy(secret) < rule.entropy:
                    continue
                if rule.check is not None and not rule.check(secret):
                    continue
                if any(a.search(secret) for a in rule.allow):
                    continue
                yield Finding(start, end, rule.id)

    def find(self, text: str) -> list[Finding]:
        """The secrets of ``text``, in text order, none overlapping another."""
        if len(text) < MIN_CHARS:
            return []
        kept: list[Finding] = []
        for rule, at in self._active(text):
            for found in self._candidates(rule, text, at):
                if all(found.end <= k.start or found.start >= k.end for k in kept):
                    kept.append(found)
        kept.sort(key=lambda f: f.start)
        return kept

    def redact(self, text: str) -> tuple[str, list[Finding]]:
        """``text`` with every secret replaced by its marker, and the secrets found."""
        found = self.find(text)
        if not found:
            return text, found
        parts: list[str] = []
        at = 0
        for f in found:
            parts.append(text[at : f.start])
            parts.append(marker(f.kind))
            at = f.end
        parts.append(text[at:])
        return "".join(parts), found
