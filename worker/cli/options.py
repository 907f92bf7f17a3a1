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

from indexer.settings import RoleSettings, env_name, nest
from worker.cli.exits import fail

S = TypeVar("S", bound=RoleSettings)


def _describe(error: Mapping[str, Any]) -> str:
    loc = [str(part) for part in error.get("loc", ()) if isinstance(part, str)]
    if not loc:  # a rule over several settings: its message names them
        return str(error.get("msg", "invalid settings")).removeprefix("Value error, ")
    name = loc[-1]
    where = f"--{name.replace('_', '-')} / {env_name(name)}"
    if error.get("type") == "missing":
        return f"{where} is required"
    value = error.get("input")
    shown = "" if isinstance(value, (dict, list)) or value is None else f" (got {value!r})"
    return f"{where}: {error.get('msg', 'invalid value')}{shown}"


def settings_from(cls: type[S], args: argparse.Namespace) -> S:
    """The role's settings from the flags given, the environment and the defaults; a bad
    value exits 2 with one line naming each problem."""
    try:
        return cls(**nest(vars(args), cls))
    except ValidationError as exc:
        fail(args.command, "; ".join(_describe(e) for e in exc.errors()))
    except TypeError as exc:  # the tool limits raise upstream's TypeError messages
        fail(args.command, str(exc))


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
