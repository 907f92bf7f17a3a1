"""The README's configuration table is the settings models, written down.

Every row names a real ``SESSIONQ_*`` setting with its flag (where the CLI has one), its
default as the models define it, and the commands that read it; every setting of every
role has its row. ``python -m tests.test_readme_config`` prints the table the models
imply, to paste into the README after changing a setting.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import indexer.settings
import worker.settings
import worker.settings_node
from indexer.settings import RoleSettings, env_name, flat_fields, nested_model
from worker.cli import build_parser

README = Path(__file__).resolve().parents[1] / "README.md"
HEADER = "| flag | env | default | used by |"


def roles() -> list[type[RoleSettings]]:
    found = [
        obj
        for module in (indexer.settings, worker.settings, worker.settings_node)
        for obj in vars(module).values()
        if isinstance(obj, type) and issubclass(obj, RoleSettings) and obj.command
    ]
    return sorted(set(found), key=lambda cls: cls.command)


def _flags(parser: argparse.ArgumentParser, path: str = "") -> dict[str, set[str]]:
    """Command -> its long options (argparse has no public walk, tests may look)."""
    out: dict[str, set[str]] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                out.update(_flags(child, f"{path} {name}".strip()))
    if path:
        out[path] = {o for a in parser._actions for o in a.option_strings if o.startswith("--")}
    return out


def _default(cls: type[RoleSettings], name: str) -> str:
    path = flat_fields(cls)[name][0]
    field = cls.model_fields[path[0]]
    if len(path) == 2:
        nested = nested_model(field.annotation)
        assert nested is not None
        field = nested.model_fields[path[1]]
    if field.is_required():
        return "— (required)"
    value: Any = field.get_default(call_default_factory=True)
    if value is None:
        return "—"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    return f"`{value}`"


def expected_rows() -> dict[str, tuple[str, str, str]]:
    """env name -> (flag, default, used by), from the models and the parser."""
    flags = _flags(build_parser())
    per_name: dict[str, dict[str, str]] = {}
    for cls in roles():
        for name in flat_fields(cls):
            per_name.setdefault(name, {})[cls.command] = _default(cls, name)
    rows: dict[str, tuple[str, str, str]] = {}
    for name, by_command in sorted(per_name.items()):
        flag = f"--{name.replace('_', '-')}"
        has_flag = any(flag in flags.get(cmd, set()) for cmd in by_command)
        defaults = set(by_command.values())
        optional = sorted(cmd for cmd, d in by_command.items() if d == "—")
        if len(defaults) == 1:
            default = defaults.pop()
        elif defaults == {"—", "— (required)"}:
            default = f"— (required; optional for {', '.join(optional)})"
        else:
            default = ", ".join(f"{d} ({cmd})" for cmd, d in sorted(by_command.items()))
        rows[env_name(name)] = (
            f"`{flag}`" if has_flag else "—",
            default,
            ", ".join(sorted(by_command)),
        )
    return rows


def readme_rows() -> dict[str, tuple[str, str, str]]:
    text = README.read_text(encoding="utf-8")
    start = text.index(HEADER)
    rows: dict[str, tuple[str, str, str]] = {}
    for line in text[start:].splitlines()[2:]:
        if not line.startswith("|"):
            break
        flag, env, default, used = (c.strip() for c in line.strip("|").split("|"))
        rows[env.strip("`")] = (flag, default, used)
    return rows


def table() -> str:
    lines = [HEADER, "|---|---|---|---|"]
    for env, (flag, default, used) in expected_rows().items():
        lines.append(f"| {flag} | `{env}` | {default} | {used} |")
    return "\n".join(lines)


def test_readme_configuration_table_matches_the_settings_models() -> None:
    expected, documented = expected_rows(), readme_rows()
    assert set(documented) == set(expected), (
        f"missing from README: {sorted(set(expected) - set(documented))}; "
        f"not a setting: {sorted(set(documented) - set(expected))}"
    )
    for env, row in expected.items():
        assert documented[env] == row, f"{env}: README says {documented[env]}, models say {row}"


def test_every_setting_has_a_description() -> None:
    for cls in roles():
        for name, (path, _) in flat_fields(cls).items():
            if path[0] in ("kafka", "tools"):
                continue  # nested models document their own fields
            assert cls.model_fields[path[0]].description, f"{cls.__name__}.{name}"


if __name__ == "__main__":
    print(table())
