"""``JSON.stringify(value, null, indent)`` of JavaScript, byte for byte (SPEC §10.5, §13.7).

Python's ``json`` differs in number formatting (``1.0``, ``1e-07``, ``-0.0``, big ints)
and string escaping (lone surrogates, control characters), and recurses. This module
implements ECMAScript Number::toString and well-formed ``JSON.stringify`` string
quoting, iteratively, so any stored event prints exactly as upstream prints it.

A value without floats, without integers beyond 2^53 and without lone surrogates (most
events) prints the same through orjson's two-space indentation, in C: ``js_stringify``
takes that text when it can tell the value is such a one, else walks it here.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from decimal import Decimal
from typing import Any, Final

import orjson

__all__ = ["js_number", "js_quote", "js_stringify"]

_EXACT_INT_LIMIT: Final = 2**53
_SHORT_ESCAPES: Final = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
}
# A surrogate pair first (it is one astral character to JavaScript), then everything
# JSON.stringify escapes: quote, backslash, C0 controls, lone surrogates.
_NEEDS_ESCAPE: Final = re.compile('[\ud800-\udbff][\udc00-\udfff]|["\\\\\x00-\x1f\ud800-\udfff]')


def _escape(match: re.Match[str]) -> str:
    text = match.group()
    if len(text) == 2:
        high, low = ord(text[0]), ord(text[1])
        return chr(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))
    short = _SHORT_ESCAPES.get(text)
    return short if short is not None else f"\\u{ord(text):04x}"


def js_quote(text: str) -> str:
    """A JSON string literal as well-formed ``JSON.stringify`` writes it.

    Non-ASCII (incl. U+2028/U+2029) stays literal; lone surrogates become lowercase
    ``\\udxxx`` escapes; a surrogate pair held as two code points becomes its character.
    """
    return '"' + _NEEDS_ESCAPE.sub(_escape, text) + '"'


def js_number(value: int | float) -> str:
    """ECMAScript Number::toString of ``value`` as a JSON number (non-finite → ``null``).

    Python ints beyond 2^53 are rounded to a double first, as ``JSON.parse`` would have.
    """
    if isinstance(value, bool):
        raise TypeError("a bool is not a JSON number")
    if isinstance(value, int):
        if -_EXACT_INT_LIMIT <= value <= _EXACT_INT_LIMIT:
            return str(value)
        try:
            value = float(value)
        except OverflowError:
            return "null"
    if not math.isfinite(value):
        return "null"
    if value == 0:
        return "0"  # covers -0
    if value < 0:
        return "-" + _positive_number(-value)
    return _positive_number(value)


def _positive_number(value: float) -> str:
    # repr() is the shortest round-tripping digit string, the same digits ECMAScript picks.
    sign, digit_tuple, exponent = Decimal(repr(value)).as_tuple()
    del sign
    assert isinstance(exponent, int)
    digits = "".join(map(str, digit_tuple)).rstrip("0")
    exponent += len("".join(map(str, digit_tuple))) - len(digits)
    k = len(digits)
    n = exponent + k  # value = 0.digits × 10^n
    if k <= n <= 21:
        return digits + "0" * (n - k)
    if 0 < n <= 21:
        return digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return "0." + "0" * (-n) + digits
    e = n - 1
    exp = ("+" if e >= 0 else "-") + str(abs(e))
    if k == 1:
        return digits + "e" + exp
    return digits[0] + "." + digits[1:] + "e" + exp


def _scalar(value: Any) -> str | None:
    """The JSON text of a non-container value, or None for a container."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return js_quote(value)
    if isinstance(value, (int, float)):
        return js_number(value)
    if isinstance(value, (dict, list, tuple)):
        return None
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def _key(key: Any) -> str:
    if isinstance(key, str):
        return js_quote(key)
    if key is None or isinstance(key, (bool, int, float)):
        text = _scalar(key)
        assert text is not None
        return js_quote(text)
    raise TypeError(f"object key of type {type(key).__name__} is not JSON serializable")


_END: Final[Any] = object()
_INDENT_2: Final = orjson.OPT_INDENT_2 | orjson.OPT_STRICT_INTEGER
_FRACTION_OR_EXPONENT_AT_END: Final = re.compile(r"[.eE][-+]?[0-9]+,?$", re.MULTILINE)


def _via_orjson(value: Any) -> str | None:
    """orjson's indented text of ``value`` when it is ``JSON.stringify(value, null, 2)``,
    else None. They agree but on numbers and lone surrogates: orjson refuses a lone
    surrogate, a non-string key, any other object and an integer beyond 2^53
    (``OPT_STRICT_INTEGER``); a float is refused by looking at the text. Every value of
    the text sits at the end of its own line (a string's newlines are escaped), so a
    line ending in a number with a fraction or an exponent is the one way a float
    shows; a string value ends in a quote."""
    try:
        text = orjson.dumps(value, option=_INDENT_2).decode()
    except TypeError:  # orjson.JSONEncodeError is one
        return None
    if _FRACTION_OR_EXPONENT_AT_END.search(text):
        return None
    return text


def js_stringify(value: Any, indent: int | None = 2) -> str:
    """``JSON.stringify(value, null, indent)``; ``indent`` 0/None gives the compact form.

    Containers are dicts (key order kept), lists and tuples. Raises ``TypeError`` for
    other objects and ``ValueError`` for a cycle, as JavaScript throws.
    """
    if indent == 2:
        fast = _via_orjson(value)
        if fast is not None:
            return fast
    return _walked(value, indent)


def _walked(value: Any, indent: int | None) -> str:
    """``js_stringify`` by a walk over ``value`` (any value, any indent)."""
    gap = " " * indent if indent else ""
    colon = ": " if gap else ":"
    out: list[str] = []
    # Each frame: (container, item iterator, depth of its items, is_object, first_item flag).
    stack: list[tuple[Any, Iterator[Any], int, bool, list[bool]]] = []
    active: set[int] = set()

    def open_value(item: Any, depth: int) -> None:
        text = _scalar(item)
        if text is not None:
            out.append(text)
            return
        if id(item) in active:
            raise ValueError("Converting circular structure to JSON")
        is_object = isinstance(item, dict)
        if not item:
            out.append("{}" if is_object else "[]")
            return
        out.append("{" if is_object else "[")
        active.add(id(item))
        iterator: Iterator[Any] = iter(item.items()) if is_object else iter(item)
        stack.append((item, iterator, depth + 1, is_object, [True]))

    open_value(value, 0)
    while stack:
        container, iterator, depth, is_object, first = stack[-1]
        item: Any = next(iterator, _END)
        if item is _END:
            stack.pop()
            active.discard(id(container))
            if gap:
                out.append("\n" + gap * (depth - 1))
            out.append("}" if is_object else "]")
            continue
        if first[0]:
            first[0] = False
        else:
            out.append(",")
        if gap:
            out.append("\n" + gap * depth)
        if is_object:
            key, member = item
            out.append(_key(key) + colon)
            open_value(member, depth)
        else:
            open_value(item, depth)
    return "".join(out)
