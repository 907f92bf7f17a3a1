"""Writes ``worker/cli/flag_defaults.py``: each command's setting flags as its ``--help``
shows them — the help text (the field's description) and the default.

The settings models hold both, once (``indexer.settings``, ``worker.settings``); the
parser must not import them (``sessionq --help`` loads no command and no pydantic), so
this module renders them into a generated table that the parser reads, and
``tests/worker/test_flag_defaults.py`` fails when the table and the models part.

Usage: ``python -m worker.devtools.flag_defaults [--check]``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from enum import Enum
from pathlib import Path
from typing import Any, Final

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from indexer.settings import RoleSettings, flat_fields, nested_model
from indexer.settings.roles import (
    IndexerSettings,
    IngestSettings,
    SnapshotCreateSettings,
    SnapshotRestoreSettings,
)
from worker.cli.parser import flag_names
from worker.settings import (
    CallSettings,
    DeleteSettings,
    ManifestSettings,
    McpSettings,
    PublishSettings,
    ServeSettings,
    StatsSettings,
    TopicsSettings,
    WorkerSettings,
)
from worker.settings_node import NodeSettings

TARGET: Final = Path(__file__).resolve().parents[1] / "cli" / "flag_defaults.py"

# Each command that reads a settings model, and the model.
COMMAND_SETTINGS: Final[dict[str, type[RoleSettings]]] = {
    "ingest": IngestSettings,
    "stats": StatsSettings,
    "call": CallSettings,
    "manifest": ManifestSettings,
    "topics create": TopicsSettings,
    "indexer": IndexerSettings,
    "worker": WorkerSettings,
    "publish": PublishSettings,
    "snapshot create": SnapshotCreateSettings,
    "snapshot restore": SnapshotRestoreSettings,
    "delete": DeleteSettings,
    "node": NodeSettings,
    "mcp": McpSettings,
    "serve": ServeSettings,
}


def _default(model: type[BaseModel], name: str) -> Any:
    field = model.model_fields[name]
    if field.default_factory is not None:
        return field.default_factory()  # type: ignore[call-arg]
    return field.default


def _rendered(value: Any) -> str | None:
    """How a default reads in help text; None when there is nothing to show."""
    if value is PydanticUndefined or value is None or value in ([], (), "", {}):
        return None
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, Enum):
        return str(value.value)
    if isinstance(value, (list, tuple)):
        return " ".join(str(v) for v in value)
    return str(value)


def _fields(command: str, model: type[RoleSettings]) -> list[tuple[str, type[BaseModel], str]]:
    """``(dest, the model that declares it, its field name)`` of each setting flag."""
    flags = flag_names(command)
    out = []
    for name, (path, _) in sorted(flat_fields(model).items()):
        if name not in flags:
            continue
        owner: type[BaseModel] = model
        for part in path[:-1]:
            nested = nested_model(owner.model_fields[part].annotation)
            assert nested is not None
            owner = nested
        out.append((name, owner, path[-1]))
    return out


def defaults(command: str, model: type[RoleSettings]) -> dict[str, str]:
    """``{dest: default as shown}`` of the flags of ``command`` that have one."""
    out: dict[str, str] = {}
    for name, owner, field in _fields(command, model):
        shown = _rendered(_default(owner, field))
        if shown is not None:
            out[name] = shown
    return out


def helps(command: str, model: type[RoleSettings]) -> dict[str, str]:
    """``{dest: help text}``: each setting flag's field description (every setting a
    flag sets has one: ``--help`` is where an operator reads it)."""
    out: dict[str, str] = {}
    for name, owner, field in _fields(command, model):
        description = owner.model_fields[field].description
        if not description:
            raise ValueError(
                f"{owner.__name__}.{field} (sessionq {command} --{name}) has no description"
            )
        out[name] = description
    return out


def _table(name: str, table: dict[str, dict[str, str]]) -> list[str]:
    lines = [f"{name}: Final[dict[str, dict[str, str]]] = {{"]
    for command, shown in table.items():
        if not shown:
            lines.append(f"    {json.dumps(command)}: {{}},")
            continue
        lines.append(f"    {json.dumps(command)}: {{")
        lines.extend(f"        {json.dumps(k)}: {json.dumps(v)}," for k, v in shown.items())
        lines.append("    },")
    lines.append("}")
    return lines


def shared_help(
    per_command: dict[str, dict[str, str]],
) -> tuple[dict[str, str], dict[str, dict[str, str]]]:
    """``(HELP, HELP_OF)``: each flag's text written once (the text most commands give
    it), and per command only the flags whose text differs from it. A command's help
    for ``dest`` is ``HELP_OF[command].get(dest, HELP.get(dest))``."""
    counts: dict[str, Counter[str]] = {}
    for shown in per_command.values():
        for dest, text in shown.items():
            counts.setdefault(dest, Counter())[text] += 1
    common = {dest: c.most_common(1)[0][0] for dest, c in sorted(counts.items())}
    differing = {
        command: {d: t for d, t in shown.items() if t != common[d]}
        for command, shown in per_command.items()
    }
    return common, differing


def render() -> str:
    common, differing = shared_help({c: helps(c, m) for c, m in COMMAND_SETTINGS.items()})
    lines = [
        '"""Generated by ``python -m worker.devtools.flag_defaults``: do not edit. Each',
        "command's setting flags as its ``--help`` shows them: the default, and the help",
        "text, once per flag (``HELP``) and per command where it says something else",
        "(``HELP_OF``). The settings models hold both; ``tests/worker/test_flag_defaults.py``",
        'keeps these tables equal to them."""',
        "",
        "from typing import Final",
        "",
        *_table("DEFAULTS", {c: defaults(c, m) for c, m in COMMAND_SETTINGS.items()}),
        "",
        "HELP: Final[dict[str, str]] = {",
        *(f"    {json.dumps(k)}: {json.dumps(v)}," for k, v in common.items()),
        "}",
        "",
        *_table("HELP_OF", {c: d for c, d in differing.items() if d}),
    ]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description="write worker/cli/flag_defaults.py")
    parser.add_argument("--check", action="store_true", help="exit 1 when it is stale")
    args = parser.parse_args()
    text = render()
    if args.check:
        stale = TARGET.read_text(encoding="utf-8") != text
        if stale:
            print(f"{TARGET} is stale: python -m worker.devtools.flag_defaults", file=sys.stderr)
        return 1 if stale else 0
    TARGET.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
