"""Declaring flags: the parser's flags carry no defaults, so the namespace holds only the
flags given (``worker.cli.options.settings_from`` hands them to the role's settings model,
which reads ``SESSIONQ_*`` and applies the defaults), and each setting flag's help names
its variable.

Standard library and the names of ``indexer.environment`` / ``indexer.formats`` only:
``sessionq --help`` builds every command's parser without loading a command.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from indexer.environment import env_name
from indexer.formats import SOURCE_FORMATS
from indexer.search_modes import SEARCH_MODES
from worker.cli.flag_defaults import DEFAULTS, HELP, HELP_OF


def setting(parser: argparse.ArgumentParser, flag: str, **kwargs: Any) -> None:
    """A flag that sets the setting of the same name (``--poll-ms`` -> ``poll_ms``)."""
    setting_as(parser, [flag], flag.removeprefix("--").replace("-", "_"), **kwargs)


def setting_as(parser: argparse.ArgumentParser, flags: list[str], dest: str, **kwargs: Any) -> None:
    """A setting under short flags and its own (``--to`` = ``--snapshot-to``). Its help is
    the setting's field description (``HELP``, ``HELP_OF``: written once, in the settings
    model), then its default, if it has one, and its variable."""
    command = parser.prog.removeprefix("sessionq ")
    default = DEFAULTS.get(command, {}).get(dest)
    said = f"default: {default}; {env_name(dest)}" if default is not None else env_name(dest)
    text = HELP_OF.get(command, {}).get(dest, HELP.get(dest, ""))
    kwargs["help"] = f"{text} ({said})".strip().replace("%", "%%")
    parser.add_argument(*flags, dest=dest, default=argparse.SUPPRESS, **kwargs)


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


def redact_flag(parser: argparse.ArgumentParser) -> None:
    """``--redact-secrets`` of a command that writes a data dir (docs/security.md)."""
    setting(
        parser,
        "--redact-secrets",
        choices=["off", "on", "store"],
    )


def data(p: argparse.ArgumentParser) -> None:
    setting(p, "--data", type=Path)


def bootstrap(p: argparse.ArgumentParser) -> None:
    """The broker address and how to connect to it (TLS, SASL); the SASL password is
    read from a file or ``SESSIONQ_SASL_PASSWORD``, never from the command line."""
    setting(p, "--bootstrap")
    setting(
        p,
        "--security-protocol",
        choices=["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"],
    )
    setting(
        p,
        "--sasl-mechanism",
        choices=["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"],
    )
    setting(p, "--sasl-username")
    setting(p, "--sasl-password-file", type=Path)
    setting(p, "--ssl-cafile", type=Path)
    setting(p, "--ssl-certfile", type=Path)
    setting(p, "--ssl-keyfile", type=Path)


def service(p: argparse.ArgumentParser) -> None:
    """The flags of every long-running role: its logs and its event loop."""
    setting(p, "--log-format", choices=["text", "json"])
    setting(p, "--log-level", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    setting(
        p,
        "--event-loop",
        choices=["uvloop", "asyncio"],
    )


def ops(p: argparse.ArgumentParser) -> None:
    setting(p, "--metrics-listen")
    service(p)


def log_format(p: argparse.ArgumentParser) -> None:
    setting(
        p,
        "--format",
        choices=list(SOURCE_FORMATS),
    )


def commit_bytes(p: argparse.ArgumentParser) -> None:
    """The bound of a writer's open batch in bytes (``indexer.store.bounds``)."""
    setting(
        p,
        "--commit-every-bytes",
        type=positive_int,
    )


def retention(p: argparse.ArgumentParser) -> None:
    setting(p, "--retain-days", type=positive_int)


def tool_limits(p: argparse.ArgumentParser) -> None:
    setting(p, "--max-search-results", type=positive_int)
    setting(p, "--search-timeout-ms", type=positive_int)
    setting(p, "--max-timeout-ms", type=positive_int)
    setting(
        p,
        "--search-mode",
        choices=list(SEARCH_MODES),
    )


def indexer_snapshots(p: argparse.ArgumentParser) -> None:
    """``sessionq indexer``'s periodic snapshots."""
    setting(
        p,
        "--snapshot-every",
        metavar="DURATION",
    )
    setting(p, "--snapshot-to")
    setting(p, "--snapshot-keep", type=positive_int)
