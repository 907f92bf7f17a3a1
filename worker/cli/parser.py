"""The ``sessionq`` parser: every command and its flags, declared without loading any
command's code (``worker.cli.flags``; ``worker.cli.commands`` names the function that
runs each command, imported only when it runs).

Each command is declared by its path (``"call"``, ``"topics create"``): the parser's
namespace carries that path as ``run``.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, TypeAlias

from worker.cli import flags
from worker.cli.flags import nonneg_int, positive_int, redact_flag, setting, setting_as

Subparsers: TypeAlias = "argparse._SubParsersAction[Any]"

DESCRIPTION = (
    "sessionq lets coding agents search and read their own and their workspace's earlier\n"
    "sessions. On one machine: `sessionq serve` (HTTP API and console) or `sessionq mcp`\n"
    "(for an agent) over your agents' logs; on a Kafka cluster: `indexer`, `worker` or\n"
    "`node`. `sessionq COMMAND --help` says what a command does, with its defaults.\n\n"
    "Every setting flag can also be set as an environment variable SESSIONQ_<FLAG>\n"
    "(upper case, dashes as underscores); a flag given wins over its variable."
)
LOGS = "dsh, Claude Code, Codex, Gemini CLI, OpenCode, Copilot CLI, Aider"
TOOLS = (
    "session_search, session_event_search, session_trace, session_event_trace or session_event_read"
)


def command(sub: Subparsers, path: str, help: str) -> argparse.ArgumentParser:
    """The parser of the command at ``path``: its last word under ``sub``."""
    p: argparse.ArgumentParser = sub.add_parser(
        path.split()[-1], help=help, description=help[:1].upper() + help[1:] + "."
    )
    p.set_defaults(run=path)
    return p


def _store_commands(sub: Subparsers) -> None:
    p = command(sub, "ingest", f"index session logs ({LOGS}) into a data directory")
    p.add_argument("paths", nargs="+", help="session log files or directories")
    flags.data(p)
    flags.log_format(p)
    setting(p, "--commit-every", type=positive_int)
    flags.commit_bytes(p)
    setting(
        p,
        "--jobs",
        type=nonneg_int,
    )
    redact_flag(p)

    p = command(sub, "stats", "what a data directory holds")
    flags.data(p)
    p.add_argument("--json", action="store_true", help="print JSON")

    p = command(sub, "call", "call one tool as a caller session")
    p.add_argument("tool", help=TOOLS)
    p.add_argument("arguments", help="the tool arguments as a JSON object")
    flags.data(p)
    flags.bootstrap(p)
    p.add_argument("--caller", required=True, help="the trusted caller session id")
    flags.tool_limits(p)
    p.add_argument(
        "--step-seq", type=nonneg_int, default=None, help="seq of the caller's current step/start"
    )
    p.add_argument("--timeout-ms", type=nonneg_int, default=None, help="call deadline")
    p.add_argument(
        "--workspace", default=None, help="the caller's cwd, vouched for in its token (Kafka)"
    )
    setting(p, "--signing-key", type=Path)
    setting(p, "--key-id")
    p.add_argument("--json", action="store_true", help="print the reply envelope")
    p.add_argument("--verbose", action="store_true", help="print internal diagnostics")

    command(sub, "manifest", "print the prompt section and tool definitions")

    p = command(sub, "demo-corpus", "write a demo dsh session root (make run uses it)")
    p.add_argument("--out", type=Path, required=True, help="output directory")
    p.add_argument("--sessions", type=positive_int, default=24, help="number of sessions (>= 8)")
    p.add_argument("--seed", type=int, default=7, help="random seed (same seed, same files)")


def _kafka_commands(sub: Subparsers) -> None:
    p = sub.add_parser("topics", help="Kafka topics")
    tsub = p.add_subparsers(dest="topics_command", required=True)
    tp = command(tsub, "topics create", "create sessionq's topics (idempotent)")
    flags.bootstrap(tp)
    setting(tp, "--partitions", type=positive_int)
    setting(tp, "--replication-factor", type=positive_int)
    setting(
        tp,
        "--min-insync-replicas",
        type=positive_int,
    )
    setting(
        tp,
        "--events-retention-days",
        type=nonneg_int,
    )

    p = command(sub, "indexer", "consume the events topic into a data directory")
    flags.bootstrap(p)
    flags.data(p)
    flags.indexer_snapshots(p)
    flags.retention(p)
    flags.commit_bytes(p)
    redact_flag(p)
    flags.ops(p)

    p = command(sub, "worker", "answer tool calls from the requests topic")
    flags.bootstrap(p)
    flags.data(p)
    setting(p, "--group")
    setting(
        p,
        "--reply-topics",
        nargs="+",
        metavar="PATTERN",
    )
    setting(p, "--keyring", type=Path)
    setting(
        p,
        "--insecure-unauthenticated-callers",
        action="store_true",
    )
    setting(
        p,
        "--wait-for-index",
        action=argparse.BooleanOptionalAction,
    )
    flags.tool_limits(p)
    flags.ops(p)

    p = command(sub, "publish", f"publish session logs ({LOGS}) to the events topic")
    p.add_argument("paths", nargs="+", help="session log files or dsh roots")
    flags.bootstrap(p)
    p.add_argument("--follow", action="store_true", help="keep publishing appended events")
    flags.log_format(p)
    flags.service(p)


def _keys_command(sub: Subparsers) -> None:
    p = sub.add_parser("keys", help="caller-signing keys of hosts")
    ksub = p.add_subparsers(dest="keys_command", required=True)
    g = command(ksub, "keys generate", "a host key pair and its keyring entry")
    g.add_argument("--kid", required=True, help="the key's id (the host's name)")
    g.add_argument("--out", type=Path, required=True, help="directory for KID.key and KID.pub")
    g.add_argument(
        "--workspace",
        action="append",
        required=True,
        help="a cwd prefix this host may speak for (repeat; '*' for every workspace)",
    )
    g.add_argument("--keyring", type=Path, default=None, help="add the entry to this keyring file")


def _snapshot_command(sub: Subparsers) -> None:
    p = sub.add_parser("snapshot", help="consistent copies of a data dir (directory or S3)")
    ssub = p.add_subparsers(dest="snapshot_command", required=True)

    c = command(ssub, "snapshot create", "snapshot a data dir, also while its indexer runs")
    flags.data(c)
    setting_as(c, ["--to", "--snapshot-to"], "snapshot_to")
    setting_as(
        c,
        ["--keep", "--snapshot-keep"],
        "snapshot_keep",
        type=positive_int,
    )

    r = command(ssub, "snapshot restore", "restore the newest snapshot into a data dir")
    flags.data(r)
    setting_as(
        r,
        ["--from", "--snapshot-from"],
        "snapshot_from",
    )
    r.add_argument("--force", action="store_true", help="replace a data dir that holds data")
    r.add_argument(
        "--if-empty",
        action="store_true",
        help="do nothing (exit 0) when the data dir holds data or no snapshot exists yet",
    )


def _delete_command(sub: Subparsers) -> None:
    p = command(sub, "delete", "erase sessions (delete records, or a serve's admin API)")
    p.add_argument("session_ids", nargs="+", metavar="SESSION_ID", help="sessions to erase")
    flags.bootstrap(p)
    flags.data(p)
    p.add_argument(
        "--workspace",
        default=None,
        help="the sessions' cwd (their partition key) when no --data is at hand",
    )
    setting(p, "--url")
    setting(p, "--token-file", type=Path)


def _node_command(sub: Subparsers) -> None:
    p = command(
        sub, "node", "a partitioned node: index and answer the partitions the group gives it"
    )
    flags.bootstrap(p)
    flags.data(p)
    setting(p, "--group")
    setting(p, "--keyring", type=Path)
    setting(
        p,
        "--insecure-unauthenticated-callers",
        action="store_true",
    )
    setting(
        p,
        "--reply-topics",
        nargs="+",
        metavar="PATTERN",
    )
    setting(
        p,
        "--standby-replicas",
        type=nonneg_int,
    )
    setting(p, "--snapshot-to")
    setting(
        p,
        "--snapshot-every",
        metavar="DURATION",
    )
    setting(p, "--snapshot-keep", type=positive_int)
    setting(p, "--snapshot-from")
    setting(
        p,
        "--session-timeout-ms",
        type=positive_int,
    )
    flags.retention(p)
    flags.commit_bytes(p)
    redact_flag(p)
    flags.tool_limits(p)
    flags.ops(p)


def _mcp_command(sub: Subparsers) -> None:
    p = command(sub, "mcp", "serve the five tools over MCP (stdio or Streamable HTTP)")
    setting(p, "--transport", choices=["stdio", "http"])
    flags.data(p)
    setting(p, "--sessions", nargs="+", type=Path)
    flags.log_format(p)
    flags.bootstrap(p)
    setting(p, "--listen")
    setting(p, "--token-file", type=Path)
    setting(p, "--watch", choices=["auto", "poll"])
    setting(p, "--allowed-hosts", nargs="+", metavar="NAME")
    setting(p, "--caller")
    setting(p, "--workspace")
    setting(p, "--signing-key", type=Path)
    setting(p, "--key-id")
    redact_flag(p)
    flags.tool_limits(p)
    flags.service(p)


def _serve_command(sub: Subparsers) -> None:
    p = command(sub, "serve", "embedded mode: ingest + watch logs, HTTP API, no broker")
    setting(
        p,
        "--sessions",
        nargs="+",
        type=Path,
    )
    flags.log_format(p)
    flags.data(p)
    setting(p, "--listen")
    setting(p, "--watch", choices=["auto", "poll"])
    setting(p, "--token-file", type=Path)
    setting(p, "--allowed-hosts", nargs="+", metavar="NAME")
    flags.retention(p)
    redact_flag(p)
    flags.tool_limits(p)
    flags.service(p)


class _Parser(argparse.ArgumentParser):
    """No abbreviated flags anywhere: ``--sasl-password X`` must not be taken for
    ``--sasl-password-file X`` (a secret in argv, then echoed as a path)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["allow_abbrev"] = False
        super().__init__(*args, **kwargs)


def command_parser(path: str) -> argparse.ArgumentParser:
    """The parser of the command at ``path`` (``"topics create"``)."""
    parser = build_parser()
    for word in path.split():
        (sub,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = sub.choices[word]
    return parser


def flag_names(path: str) -> dict[str, str]:
    """Each destination of the command at ``path`` and the flag that sets it, as the
    command spells it first (``snapshot_to`` -> ``--to`` in ``snapshot create``)."""
    return {
        action.dest: action.option_strings[0]
        for action in command_parser(path)._actions
        if action.option_strings and action.dest != "help"
    }


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="sessionq", description=DESCRIPTION)
    sub = parser.add_subparsers(dest="command", required=True)
    _store_commands(sub)
    _kafka_commands(sub)
    _keys_command(sub)
    _snapshot_command(sub)
    _delete_command(sub)
    _node_command(sub)
    _mcp_command(sub)
    _serve_command(sub)
    return parser
