"""``sessionq stats`` as people read it: the JSON form (``--json``) laid out as aligned
rows, nested tables as tables, counts with thousands separators and sizes in units.

The text is derived from the JSON form and nothing else, so both always say the same;
scripts read ``--json`` (its keys are the stable interface), people read this.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

_UNITS: Final = ("B", "KiB", "MiB", "GiB", "TiB")


def stats_lines(shown: Mapping[str, Any]) -> list[str]:
    """The rows of ``shown`` (a store's or a node's stats) as aligned text lines."""
    return _section(shown, indent="")


def _section(shown: Mapping[str, Any], indent: str) -> list[str]:
    scalars = [(k, v) for k, v in shown.items() if not isinstance(v, Mapping)]
    width = max((len(_label(k)) for k, _ in scalars), default=0)
    lines = [f"{indent}{_label(k):<{width}}  {_value(k, v)}" for k, v in scalars]
    for key, value in shown.items():
        if isinstance(value, Mapping):
            lines.append(f"{indent}{_label(key)}:")
            lines.extend(_nested(value, indent + "  "))
    return lines


def _nested(value: Mapping[str, Any], indent: str) -> list[str]:
    """A mapping of rows (every value a mapping of scalars) as a table with a header
    row, leaving out the all-zero rows; any other mapping as a section of its own."""
    if not value:
        return [f"{indent}none"]
    rows = list(value.values())
    if all(isinstance(r, Mapping) and not _has_mapping(r) for r in rows):
        return _table(value, indent)
    return _section(value, indent)


def _has_mapping(row: Mapping[str, Any]) -> bool:
    return any(isinstance(v, Mapping) for v in row.values())


def _table(value: Mapping[str, Mapping[str, Any]], indent: str) -> list[str]:
    shown = {k: r for k, r in value.items() if any(v not in (0, None, [], "") for v in r.values())}
    if not shown:
        return [f"{indent}none"]
    columns = list(dict.fromkeys(c for r in shown.values() for c in r))
    cells = [["", *columns]] + [
        [str(name), *(_value(c, r.get(c, "")) for c in columns)] for name, r in shown.items()
    ]
    widths = [max(len(row[i]) for row in cells) for i in range(len(columns) + 1)]
    # names and words read left-aligned, numbers right-aligned
    left = [True] + [any(isinstance(r.get(c), str) for r in shown.values()) for c in columns]
    return [
        indent
        + "  ".join(
            cell.ljust(w) if flush_left else cell.rjust(w)
            for cell, w, flush_left in zip(row, widths, left, strict=True)
        ).rstrip()
        for row in cells
    ]


def _label(key: str) -> str:
    return key.replace("_", " ")


def _value(key: str, value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int) and key.endswith("bytes"):
        return _size(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, Sequence) and not isinstance(value, str):
        return ", ".join(str(v) for v in value) if value else "none"
    return "none" if value is None else str(value)


def _size(n: int) -> str:
    size = float(n)
    for unit in _UNITS:
        if size < 1024 or unit == _UNITS[-1]:
            return f"{n} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    raise AssertionError("unreachable")
