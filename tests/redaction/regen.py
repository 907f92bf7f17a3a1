"""Strings drawn from a regex, as gitleaks' ``secrets.NewSecret`` draws its test secrets
(there with a time-seeded generator; here with the caller's seeded one, so a run's samples
are the same on every run). Only the regex subset those tests use: literals, classes,
ranges, ``\\d \\w \\s``, groups, alternation and repetition (an unbounded one repeats at
most 16 times past its minimum)."""

from __future__ import annotations

import random
import re
import string
from typing import Any

try:  # Python 3.11+: the parser moved under ``re``
    from re import _constants as sre_constants  # type: ignore[attr-defined]
    from re import _parser as sre_parse  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover
    import sre_constants  # type: ignore[no-redef]
    import sre_parse  # type: ignore[no-redef]

UNBOUNDED_EXTRA = 16
_PRINTABLE = [c for c in string.printable if c not in "\r\n\x0b\x0c"]
_CATEGORIES = {
    sre_constants.CATEGORY_DIGIT: string.digits,
    sre_constants.CATEGORY_WORD: string.ascii_letters + string.digits + "_",
    sre_constants.CATEGORY_SPACE: " ",
}


class RegexSampleError(ValueError):
    """The regex uses syntax outside the subset (or Python cannot parse it)."""


def _class(items: list[tuple[Any, Any]]) -> list[str]:
    chars: set[str] = set()
    negate = False
    for op, arg in items:
        if op is sre_constants.NEGATE:
            negate = True
        elif op is sre_constants.LITERAL:
            chars.add(chr(arg))
        elif op is sre_constants.RANGE:
            chars.update(chr(c) for c in range(arg[0], arg[1] + 1))
        elif op is sre_constants.CATEGORY and arg in _CATEGORIES:
            chars.update(_CATEGORIES[arg])
        else:
            raise RegexSampleError(f"class item {op}")
    if negate:
        return [c for c in _PRINTABLE if c not in chars]
    return sorted(chars)


def _draw(tree: Any, rng: random.Random, out: list[str]) -> None:
    for op, arg in tree:
        if op is sre_constants.LITERAL:
            out.append(chr(arg))
        elif op is sre_constants.NOT_LITERAL:
            out.append(rng.choice([c for c in _PRINTABLE if c != chr(arg)]))
        elif op is sre_constants.ANY:
            out.append(rng.choice(string.ascii_letters + string.digits))
        elif op is sre_constants.IN:
            out.append(rng.choice(_class(arg)))
        elif op in (
            sre_constants.MAX_REPEAT,
            sre_constants.MIN_REPEAT,
            sre_constants.POSSESSIVE_REPEAT,
        ):
            low, high, sub = arg
            if high is sre_constants.MAXREPEAT:
                high = low + UNBOUNDED_EXTRA
            for _ in range(rng.randint(low, high)):
                _draw(sub, rng, out)
        elif op is sre_constants.SUBPATTERN:
            _draw(arg[-1], rng, out)
        elif op is sre_constants.BRANCH:
            _draw(rng.choice(arg[1]), rng, out)
        elif op is sre_constants.AT:
            continue
        elif op is sre_constants.CATEGORY and arg in _CATEGORIES:
            out.append(rng.choice(_CATEGORIES[arg]))
        else:
            raise RegexSampleError(f"regex op {op}")


def sample_regex(pattern: str, rng: random.Random) -> str:
    """One string ``pattern`` matches, drawn with ``rng``."""
    try:
        tree = sre_parse.parse(pattern)
    except (re.error, OverflowError, RecursionError) as e:
        raise RegexSampleError(f"{pattern!r}: {e}") from e
    out: list[str] = []
    _draw(tree, rng, out)
    return "".join(out)
