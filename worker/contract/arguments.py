"""Tool arguments: the JSON schemas, their validation, and the tool-owned rules (SPEC §9.2, §9.6).

Two layers, as upstream has them. (1) Schema validation stands in for the host tool
runtime (deliberate difference 6): it reproduces that runtime's checker — every
violation in schema-walk order, ``invalid arguments: <v1>; <v2>``, code
``INVALID_ARGS``; undeclared properties are accepted (the upstream parameter root is
an open object) but must, like everything else, be lossless JSON. (2) The §9.6 rules
belong to the tools and run inside them, in the order of SPEC §9.8, so their messages
and their precedence over authorization match upstream exactly.

``jsonschema`` is not used: its messages differ, and JavaScript's number model (``3.0``
is an integer, ``-0``/NaN are not JSON numbers) needs its own checks anyway.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from importlib.resources import files
from typing import Any, Final

from indexer.errors import SessionQueryError
from indexer.model.search import (
    EventMetadataFilter,
    Query,
    SeqFilter,
    Surface,
    SurfaceFilter,
    TimeFilter,
    TypeFilter,
)
from worker.contract.errors import invalid_filter, invalid_query
from worker.contract.jsjson import js_stringify
from worker.contract.timefmt import compare_timestamps, lower_bound, parse_timestamp, upper_bound

MAX_SAFE_INTEGER: Final = 9007199254740991

Number = int | float

# ---- tool definitions (worker/contract/schemas.json: the conformance file, byte for byte) ---
_DEFINITIONS: Final[dict[str, Any]] = json.loads(
    files("worker.contract").joinpath("schemas.json").read_text(encoding="utf-8")
)
PROMPT_TEXT: Final[str] = _DEFINITIONS["prompt_section"]
TOOL_DEFINITIONS: Final[tuple[dict[str, Any], ...]] = tuple(_DEFINITIONS["tools"])
TOOL_NAMES: Final[tuple[str, ...]] = tuple(d["name"] for d in TOOL_DEFINITIONS)
_PARAMETERS: Final[dict[str, dict[str, Any]]] = {
    d["name"]: d["parameters"] for d in TOOL_DEFINITIONS
}


# ---- schema validation (the runtime's checker) -------------------------------------------------
def _is_json_number(value: Any) -> bool:
    """A finite JavaScript number other than -0 (an int too big for a double is Infinity)."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        try:
            float(value)
        except OverflowError:
            return False
        return True
    if isinstance(value, float):
        return math.isfinite(value) and not (value == 0 and math.copysign(1.0, value) < 0)
    return False


def _is_integer(value: Any) -> bool:
    return _is_json_number(value) and (isinstance(value, int) or float(value).is_integer())


def is_lossless_json(value: Any) -> bool:
    """Whether ``value`` is plain JSON that JavaScript holds without loss (iterative)."""
    pending = [value]
    while pending:
        item = pending.pop()
        if item is None or isinstance(item, (bool, str)):
            continue
        if isinstance(item, (int, float)):
            if not _is_json_number(item):
                return False
        elif isinstance(item, (list, tuple)):
            pending.extend(item)
        elif isinstance(item, dict):
            if not all(isinstance(key, str) for key in item):
                return False
            pending.extend(item.values())
        else:
            return False
    return True


def _shown(path: str) -> str:
    return "arguments" if path == "" else path


def _member(path: str, key: str) -> str:
    return key if path == "" else f"{path}.{key}"


def _violations(node: dict[str, Any], value: Any, path: str, lossless: bool) -> list[str]:
    """Upstream ``checkValue`` for the subset the five schemas use (depth = schema depth).
    ``lossless``: the whole value is known to be lossless JSON, so no part needs the
    check again."""
    kind = node.get("type")
    if kind == "object":
        if not isinstance(value, dict):
            return [f'"{_shown(path)}" must be an object']
        found = [
            f'missing required property "{_member(path, key)}"'
            for key in node.get("required", [])
            if key not in value
        ]
        for key, child in node.get("properties", {}).items():
            if key in value:
                found.extend(_violations(child, value[key], _member(path, key), lossless))
        if found or lossless or is_lossless_json(value):
            return found
        return [f'"{_shown(path)}" must be a lossless JSON object']
    if kind == "array":
        if not isinstance(value, (list, tuple)):
            return [f'"{_shown(path)}" must be an array']
        items = node.get("items")
        found = []
        if items is not None:
            for index, entry in enumerate(value):
                found.extend(_violations(items, entry, f"{path}[{index}]", lossless))
        if found or lossless or is_lossless_json(value):
            return found
        return [f'"{_shown(path)}" must be a dense lossless JSON array']
    if kind == "string":
        if not isinstance(value, str):
            return [f'"{_shown(path)}" must be a string']
        allowed = node.get("enum")
        if allowed is not None and value not in allowed:
            return [f'"{_shown(path)}" must be one of {js_stringify(allowed, None)}']
        return []
    if kind == "integer":
        return [] if _is_integer(value) else [f'"{_shown(path)}" must be an integer']
    if kind == "boolean":
        return [] if isinstance(value, bool) else [f'"{_shown(path)}" must be a boolean']
    raise AssertionError(f"schema type {kind!r} is outside the supported subset")


# ---- bounds (sessionq; upstream has none) --------------------------------------------------------
MAX_ARGUMENT_DEPTH: Final = 32
"""Arguments nested deeper than this are refused before the schema walk (which recurses)."""
MAX_QUERY_CHARS: Final = 4096
"""A search ``query`` longer than this is refused: tokenizing and phrase-matching a
megabyte-long query costs seconds of CPU and holds its memory."""


MAX_ARGUMENT_CHARS: Final = 512 * 1024
"""All strings (keys included) of one call's arguments together: room for the 10,000
filter values SPEC allows, not for megabytes that every later step would copy."""


def bound_violations(arguments: Any) -> list[str]:
    """What makes ``arguments`` too large to check at all, iteratively (no recursion)."""
    stack: list[tuple[Any, int]] = [(arguments, 1)]
    chars = 0
    while stack:
        value, depth = stack.pop()
        if isinstance(value, str):
            chars += len(value)
        elif isinstance(value, dict | list):
            if depth > MAX_ARGUMENT_DEPTH:
                return [f"arguments must not nest deeper than {MAX_ARGUMENT_DEPTH} levels"]
            if isinstance(value, dict):
                chars += sum(len(key) for key in value)
            items: Iterable[Any] = value.values() if isinstance(value, dict) else value
            stack.extend((item, depth + 1) for item in items)
        else:
            chars += 1
        if chars > MAX_ARGUMENT_CHARS:
            return [f"arguments must total at most {MAX_ARGUMENT_CHARS} characters"]
    query = arguments.get("query") if isinstance(arguments, dict) else None
    if isinstance(query, str) and len(query) > MAX_QUERY_CHARS:
        return [f'"query" must be at most {MAX_QUERY_CHARS} characters']
    return []


def schema_violations(tool: str, arguments: Any) -> list[str]:
    """Every violation of ``tool``'s parameter schema, in upstream walk order. Arguments
    lossless as a whole (the usual case) are walked for that once, not again at every
    object and array of the schema."""
    return _violations(_PARAMETERS[tool], arguments, "", is_lossless_json(arguments))


def strings(raw: dict[str, Any], key: str) -> tuple[Any, ...] | None:
    """A schema-valid list argument as a tuple (``None`` when omitted)."""
    value = raw.get(key)
    return None if value is None else tuple(value)


# ---- tool-owned rules (SPEC §9.6) --------------------------------------------------------------
def normalize_query(value: str) -> Query:
    """The query layer's one normalization (``indexer.query.search.Query.parse``), run
    while the arguments are checked, before the caller is resolved; its refusal is the
    tool's ``INVALID_QUERY``. The service takes the ``Query`` as it is."""
    try:
        return Query.parse(value)
    except SessionQueryError as exc:
        raise invalid_query(exc.message) from None


def require_values(name: str, values: tuple[Any, ...]) -> tuple[Any, ...]:
    """A supplied list must not be empty (``name`` is the message's name, see the quirk)."""
    if not values:
        raise invalid_filter(f"{name} must contain at least one value when supplied")
    return values


def non_negative_safe_int(name: str, value: Number) -> int:
    """``value`` as an int when it is a non-negative safe integer (bools never are)."""
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or (isinstance(value, float) and not value.is_integer())
        or not 0 <= value <= MAX_SAFE_INTEGER
    ):
        raise invalid_filter(f"{name} must be a non-negative safe integer")
    return int(value)


def sequence_range(from_: Number | None, to: Number | None) -> tuple[int | None, int | None]:
    """Checked inclusive sequence bounds (lower bound first, then upper, then order)."""
    low = None if from_ is None else non_negative_safe_int("sequence lower bound", from_)
    high = None if to is None else non_negative_safe_int("sequence upper bound", to)
    if low is not None and high is not None and low > high:
        raise invalid_filter("session sequence range from must be less than or equal to to")
    return low, high


def timestamp_range(
    name: str, from_: str | None, to: str | None
) -> tuple[Number | None, Number | None] | None:
    """Service bounds of an ISO range (``name``: ``created_at`` or ``time``); None if absent."""
    if from_ is None and to is None:
        return None
    low = None if from_ is None else parse_timestamp(f"{name}_from", from_)
    high = None if to is None else parse_timestamp(f"{name}_to", to)
    if low is not None and high is not None and compare_timestamps(low, high) > 0:
        raise invalid_filter(f"session {name} range from must be less than or equal to to")
    return (
        None if low is None else lower_bound(low),
        None if high is None else upper_bound(high),
    )


def parent_session_ids(values: tuple[str, ...] | None) -> list[str] | None:
    """Requested parent ids, non-empty when supplied, deduplicated in first-seen order."""
    if values is None:
        return None
    require_values("parent_session_ids", values)
    return list(dict.fromkeys(values))


def event_filters(
    *,
    seq_from: Number | None,
    seq_to: Number | None,
    time_from: str | None,
    time_to: str | None,
    event_types: tuple[str, ...] | None,
    surfaces: tuple[Surface, ...] | None,
) -> list[EventMetadataFilter]:
    """``seq`` (when bounded), ``time``, ``type``, ``surface`` clauses, in this order.

    An empty ``surfaces`` list reports the name ``surfaces`` for both tools (quirk).
    """
    filters: list[EventMetadataFilter] = []
    low, high = sequence_range(seq_from, seq_to)
    if low is not None or high is not None:
        filters.append(SeqFilter(from_=low, to=high))
    time = timestamp_range("time", time_from, time_to)
    if time is not None:
        filters.append(TimeFilter(from_=time[0], to=time[1]))
    if event_types is not None:
        filters.append(TypeFilter(require_values("event_types", event_types)))
    if surfaces is not None:
        filters.append(SurfaceFilter(require_values("surfaces", surfaces)))
    return filters
