"""Flags and settings: the parser declares flags with no defaults, so the namespace holds
only the flags given; ``settings_from`` adds them to the role's settings model, which
reads ``SESSIONQ_*`` and applies the defaults (``indexer.settings``). Invalid values fail
at start with one line naming the flag and the variable."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NoReturn, TypeVar

from pydantic import ValidationError

from indexer.settings import RoleSettings, env_name, nest

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_TOOL_ERROR = 3

S = TypeVar("S", bound=RoleSettings)


def setting(parser: argparse.ArgumentParser, flag: str, **kwargs: Any) -> None:
    """A flag that sets the setting of the same name (``--poll-ms`` -> ``poll_ms``)."""
    name = flag.removeprefix("--").replace("-", "_")
    kwargs.setdefault("help", "")
    kwargs["help"] = f"{kwargs['help']} ({env_name(name)})".strip()
    parser.add_argument(flag, dest=name, default=argparse.SUPPRESS, **kwargs)


def redact_flag(parser: argparse.ArgumentParser) -> None:
    """``--redact-secrets`` of a command that writes a data dir (docs/security.md)."""
    setting(
        parser,
        "--redact-secrets",
        choices=["off", "on", "store"],
        help="secrets in the logs: on (never indexed or shown; default), store (also never"
        " stored), off (upstream-exact output)",
    )


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


def fail(command: str, message: str) -> NoReturn:
    print(f"sessionq {command}: {message}", file=sys.stderr)
    raise SystemExit(EXIT_USAGE)


def settings_from(cls: type[S], args: argparse.Namespace) -> S:
    """The role's settings from the flags given, the environment and the defaults; a bad
    value exits 2 with one line naming each problem."""
    try:
        return cls(**nest(vars(args), cls))
    except ValidationError as exc:
        fail(args.command, "; ".join(_describe(e) for e in exc.errors()))
    except TypeError as exc:  # the tool limits raise upstream's TypeError messages
        fail(args.command, str(exc))


def nonneg_int(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {value!r}") from None
    if n < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0: {n}")
    return n


def positive_int(value: str) -> int:
    n = nonneg_int(value)
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1: {n}")
    return n


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
