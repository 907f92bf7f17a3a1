"""The role's settings from the flags given: the parser declares flags with no defaults
(``worker.cli.flags``), so the namespace holds only the flags given; ``settings_from``
adds them to the role's settings model, which reads ``SESSIONQ_*`` and applies the
defaults (``indexer.settings``). Invalid values fail at start with one line naming the
flag and the variable."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

from pydantic import ValidationError

from indexer.settings import RoleSettings, env_name, nest, nested_model
from worker.cli.exits import fail

S = TypeVar("S", bound=RoleSettings)


def _setting(loc: list[str], cls: type[RoleSettings]) -> list[str]:
    """The flat setting names an error's location stands for: a field, a nested model's
    field (by name or alias), or every required field of a nested model that is missing
    as a whole (``kafka`` -> ``bootstrap``)."""
    field = cls.model_fields.get(loc[0])
    nested = nested_model(field.annotation) if field is not None else None
    if nested is None:
        return [loc[-1]]
    if len(loc) == 1:
        return [n for n, f in nested.model_fields.items() if f.is_required()] or loc
    for name, inner in nested.model_fields.items():
        if loc[1] in (name, inner.alias):
            return [name]
    return [loc[-1]]


def _where(name: str, flags: Mapping[str, str]) -> str:
    """How a setting is given to this command: its flag and its variable, or the
    variable alone when the command has no flag for it."""
    flag = flags.get(name)
    return f"{flag} / {env_name(name)}" if flag else env_name(name)


def _shown(value: Any) -> str:
    return "" if isinstance(value, (dict, list)) or value is None else f" (got {value!r})"


def _describe(error: Mapping[str, Any], cls: type[RoleSettings], flags: Mapping[str, str]) -> str:
    loc = [str(part) for part in error.get("loc", ()) if isinstance(part, str)]
    if not loc:  # a rule over several settings: its message names them
        return str(error.get("msg", "invalid settings")).removeprefix("Value error, ")
    names = _setting(loc, cls)
    if error.get("type") == "missing":
        return "; ".join(f"{_where(name, flags)} is required" for name in names)
    message = error.get("msg", "invalid value")
    return f"{_where(names[0], flags)}: {message}{_shown(error.get('input'))}"


def settings_from(cls: type[S], args: argparse.Namespace) -> S:
    """The role's settings from the flags given, the environment and the defaults; a bad
    value exits 2 with one line naming each problem by its flag and variable."""
    from worker.calls.limits import ToolLimitError
    from worker.cli.parser import flag_names

    try:
        return cls(**nest(vars(args), cls))
    except ValidationError as exc:
        flags = flag_names(args.run)
        fail(args.command, "; ".join(_describe(e, cls, flags) for e in exc.errors()))
    except ToolLimitError as exc:  # upstream's TypeError, its words kept after the name
        where = _where(exc.setting, flag_names(args.run))
        fail(args.command, f"{where}: {exc}{_shown(exc.value)}")


def data_exists(command: str, data: Path) -> bool:
    from indexer.store.layout import sqlite_path

    if sqlite_path(data).exists():
        return True
    print(
        f"sessionq {command}: no sessionq data directory at {data}"
        " (create one with `sessionq ingest`)",
        file=sys.stderr,
    )
    return False
