"""``sessionq`` command line: parse -> the role's settings -> run.

Every setting flag can also be set through an environment variable ``SESSIONQ_<FLAG>``
(upper case, dashes as underscores); an explicit flag wins. Flags carry no defaults:
the settings models (``indexer.settings``, ``worker.settings``) hold them, once.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from indexer.errors import KafkaAccessError, RedactionModeError, UndeliverableError
from indexer.logs.importers.detect import FORMATS
from indexer.store.lease import DataDirBusyError
from worker.cli.delete_command import add_delete_command
from worker.cli.kafka_commands import cmd_indexer, cmd_publish, cmd_topics, cmd_worker
from worker.cli.keys_command import add_keys_command
from worker.cli.mcp_command import add_mcp_command
from worker.cli.node_command import add_node_command
from worker.cli.options import (
    EXIT_FAILED,
    EXIT_USAGE,
    fail,
    nonneg_int,
    positive_int,
    redact_flag,
    setting,
)
from worker.cli.serve_command import cmd_serve
from worker.cli.snapshot_command import add_indexer_snapshot_flags, add_snapshot_command
from worker.cli.store_commands import (
    cmd_call,
    cmd_demo_corpus,
    cmd_ingest,
    cmd_manifest,
    cmd_stats,
)

Handler = Callable[[argparse.Namespace], int]


def _data(p: argparse.ArgumentParser) -> None:
    setting(p, "--data", type=Path, help="data directory")


def _bootstrap(p: argparse.ArgumentParser, help: str = "Kafka bootstrap address host:port") -> None:
    """The broker address and how to connect to it (TLS, SASL); the SASL password is
    read from a file or ``SESSIONQ_SASL_PASSWORD``, never from the command line."""
    setting(p, "--bootstrap", help=help)
    setting(
        p,
        "--security-protocol",
        choices=["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"],
        help="how to connect to Kafka",
    )
    setting(
        p,
        "--sasl-mechanism",
        choices=["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"],
        help="SASL mechanism (SASL_* protocols)",
    )
    setting(p, "--sasl-username", help="SASL user name")
    setting(p, "--sasl-password-file", type=Path, help="file holding the SASL password")
    setting(p, "--ssl-cafile", type=Path, help="PEM CA bundle to trust")
    setting(p, "--ssl-certfile", type=Path, help="PEM client certificate (mTLS)")
    setting(p, "--ssl-keyfile", type=Path, help="PEM client key (mTLS)")


def _logs(p: argparse.ArgumentParser) -> None:
    setting(p, "--log-format", choices=["text", "json"], help="log lines as text or JSON")
    setting(p, "--log-level", choices=["DEBUG", "INFO", "WARNING", "ERROR"], help="log level")


def _ops(p: argparse.ArgumentParser) -> None:
    setting(p, "--metrics-listen", help="HOST:PORT for /metrics, /healthz, /readyz; empty disables")
    _logs(p)


def _format(p: argparse.ArgumentParser) -> None:
    setting(
        p,
        "--format",
        choices=["auto", *FORMATS],
        help="log format of the paths (auto: recognised per root and file)",
    )


def _retention(p: argparse.ArgumentParser) -> None:
    setting(
        p, "--retain-days", type=positive_int, help="delete sessions whose newest event is older"
    )


def _tool_limits(p: argparse.ArgumentParser) -> None:
    setting(p, "--max-search-results", type=positive_int, help="most hits a search returns")
    setting(p, "--search-timeout-ms", type=positive_int, help="time budget of the searches")
    setting(p, "--max-timeout-ms", type=positive_int, help="cap on a request's timeout_ms")


def _store_commands(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser(
        "ingest", help="index session logs (dsh, Claude Code, Codex, Gemini CLI, OpenCode, Copilot)"
    )
    p.add_argument("paths", nargs="+", help="session log files or directories")
    _data(p)
    _format(p)
    setting(p, "--commit-every", type=positive_int, help="commit after this many events")
    setting(
        p,
        "--jobs",
        type=nonneg_int,
        help="worker processes that read and plan the logs (0: one per CPU core; 1: none)",
    )
    redact_flag(p)
    p.set_defaults(handler=cmd_ingest)

    p = sub.add_parser("stats", help="what a data directory holds")
    _data(p)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=cmd_stats)

    p = sub.add_parser("call", help="call one tool as a caller session")
    p.add_argument("tool", help="session_search, session_event_search, session_trace, ...")
    p.add_argument("arguments", help="the tool arguments as a JSON object")
    _data(p)
    _bootstrap(p, "call through Kafka instead")
    p.add_argument("--caller", required=True, help="the trusted caller session id")
    p.add_argument(
        "--step-seq", type=nonneg_int, default=None, help="seq of the caller's current step/start"
    )
    p.add_argument("--timeout-ms", type=nonneg_int, default=None, help="call deadline")
    p.add_argument(
        "--workspace", default=None, help="the caller's cwd, vouched for in its token (Kafka)"
    )
    setting(p, "--signing-key", type=Path, help="host private key that signs the caller")
    setting(p, "--key-id", help="the signing key's id in the workers' keyring")
    p.add_argument("--json", action="store_true", help="print the reply envelope")
    p.add_argument("--verbose", action="store_true", help="print internal diagnostics")
    p.set_defaults(handler=cmd_call)

    p = sub.add_parser("manifest", help="print the prompt section and tool definitions")
    p.set_defaults(handler=cmd_manifest)

    p = sub.add_parser("demo-corpus", help="write a demo dsh session root (make run uses it)")
    p.add_argument("--out", type=Path, required=True, help="output directory")
    p.add_argument("--sessions", type=positive_int, default=24, help="number of sessions (>= 8)")
    p.add_argument("--seed", type=int, default=7, help="random seed (same seed, same files)")
    p.set_defaults(handler=cmd_demo_corpus)


def _kafka_commands(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser("topics", help="Kafka topics")
    tsub = p.add_subparsers(dest="topics_command", required=True)
    tp = tsub.add_parser("create", help="create sessionq's topics (idempotent)")
    _bootstrap(tp)
    setting(tp, "--partitions", type=positive_int, help="partitions of the keyed topics")
    setting(tp, "--replication-factor", type=positive_int, help="replicas of every topic")
    setting(
        tp,
        "--min-insync-replicas",
        type=positive_int,
        help="topic min.insync.replicas (broker default if unset)",
    )
    setting(
        tp,
        "--events-retention-days",
        type=nonneg_int,
        help="retention of the events topic in days (0: forever)",
    )
    tp.set_defaults(handler=cmd_topics)

    p = sub.add_parser("indexer", help="consume the events topic into a data directory")
    _bootstrap(p)
    _data(p)
    add_indexer_snapshot_flags(p)
    _retention(p)
    redact_flag(p)
    _ops(p)
    p.set_defaults(handler=cmd_indexer)

    p = sub.add_parser("worker", help="answer tool calls from the requests topic")
    _bootstrap(p)
    _data(p)
    setting(p, "--group", help="consumer group")
    setting(
        p,
        "--reply-topics",
        nargs="+",
        metavar="PATTERN",
        help="fnmatch patterns a request's reply_to must match (besides the replies topic)",
    )
    setting(p, "--keyring", type=Path, help="host public keys that may vouch for callers")
    setting(
        p,
        "--insecure-unauthenticated-callers",
        action="store_true",
        help="answer requests without a caller token (trusted networks only)",
    )
    setting(
        p,
        "--wait-for-index",
        action=argparse.BooleanOptionalAction,
        help="join the group only after this data dir's indexer caught up once",
    )
    _tool_limits(p)
    _ops(p)
    p.set_defaults(handler=cmd_worker)

    p = sub.add_parser(
        "publish", help="publish session logs (dsh, Claude Code, Codex) to the events topic"
    )
    p.add_argument("paths", nargs="+", help="session log files or dsh roots")
    _bootstrap(p)
    p.add_argument("--follow", action="store_true", help="keep publishing appended events")
    _format(p)
    _logs(p)
    p.set_defaults(handler=cmd_publish)


class _Parser(argparse.ArgumentParser):
    """No abbreviated flags anywhere: ``--sasl-password X`` must not be taken for
    ``--sasl-password-file X`` (a secret in argv, then echoed as a path)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["allow_abbrev"] = False
        super().__init__(*args, **kwargs)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="sessionq", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    _store_commands(sub)
    _kafka_commands(sub)
    add_keys_command(sub)
    add_snapshot_command(sub)
    add_delete_command(sub, _bootstrap)
    add_node_command(
        sub, bootstrap=_bootstrap, tool_limits=_tool_limits, ops=_ops, retention=_retention
    )
    add_mcp_command(sub, _bootstrap, _tool_limits, _logs, _format)

    p = sub.add_parser("serve", help="embedded mode: ingest + watch logs, HTTP API, no broker")
    setting(
        p,
        "--sessions",
        nargs="+",
        type=Path,
        help="session roots (dsh, Claude Code, Codex) or files",
    )
    _format(p)
    _data(p)
    setting(p, "--listen", help="HTTP HOST:PORT")
    setting(p, "--watch", choices=["auto", "poll"], help="file notifications (auto) or polling")
    setting(p, "--token-file", type=Path, help="file holding the HTTP API's bearer token")
    setting(
        p, "--allowed-hosts", nargs="+", metavar="NAME", help="extra Host names (no token)"
    )
    _retention(p)
    redact_flag(p)
    _tool_limits(p)
    _logs(p)
    p.set_defaults(handler=cmd_serve)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    handler: Handler = args.handler
    # aiokafka logs every failed connection attempt; without a configured log (the
    # one-shot commands) Python would print them: the one line below says it all.
    logging.getLogger("aiokafka").addHandler(logging.NullHandler())
    try:
        return handler(args)
    except (KafkaAccessError, UndeliverableError) as exc:
        print(f"sessionq {args.command}: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except DataDirBusyError as exc:
        print(f"sessionq {args.command}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except RedactionModeError as exc:  # --redact-secrets the data dir cannot take
        fail(args.command, exc.message)


if __name__ == "__main__":
    sys.exit(main())
