"""``sessionq`` command line: thin parse -> settings -> run.

Every flag can also be set through an environment variable ``SESSIONQ_<FLAG>`` (upper
case, dashes as underscores); an explicit flag wins.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import orjson

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_TOOL_ERROR = 3

Handler = Callable[[argparse.Namespace], int]


def env(name: str, default: str | None = None) -> str | None:
    """The ``SESSIONQ_<NAME>`` environment value, or ``default``."""
    return os.environ.get(f"SESSIONQ_{name.upper().replace('-', '_')}", default)


def _data_arg(p: argparse.ArgumentParser) -> None:
    default = env("data")
    p.add_argument(
        "--data",
        type=Path,
        default=Path(default) if default else None,
        required=default is None,
        help="data directory (SESSIONQ_DATA)",
    )


# ---- ingest / stats ---------------------------------------------------------------------------
def cmd_ingest(args: argparse.Namespace) -> int:
    from indexer.ingest import ingest_files
    from indexer.logs.roots import discover
    from indexer.storage import Store

    files = list(discover([Path(p) for p in args.paths]))
    store = Store(args.data)
    bar = None
    if sys.stderr.isatty() and files:
        from tqdm import tqdm

        bar = tqdm(total=len(files), unit="file", file=sys.stderr, desc="ingest")
    try:
        summary = ingest_files(store, files, on_file=(lambda _p: bar.update(1)) if bar else None)
    finally:
        if bar is not None:
            bar.close()
        store.close()
    print(
        f"ingested {summary.sessions} sessions, {summary.events} events, "
        f"{summary.documents} documents from {summary.files} files"
        + (f" ({summary.unchanged} unchanged)" if summary.unchanged else "")
    )
    if summary.rejected:
        print(f"rejected {len(summary.rejected)} files:")
        for r in summary.rejected:
            print(f"  {r.reason}")
    if not files:
        print("no session logs found", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK if summary.readable else EXIT_FAILED


def cmd_stats(args: argparse.Namespace) -> int:
    from indexer.stats import store_stats

    stats = store_stats(args.data)
    if args.json:
        sys.stdout.write(orjson.dumps(stats.to_json(), option=orjson.OPT_INDENT_2).decode() + "\n")
        return EXIT_OK
    for key, value in stats.to_json().items():
        print(f"{key}: {value}")
    return EXIT_OK


# ---- call / manifest ---------------------------------------------------------------------------
def _print_reply(
    args: argparse.Namespace,
    request_id: str,
    ok: bool,
    text: str,
    envelope: dict[str, object],
    code: str | None,
    message: str | None,
) -> int:
    if args.json:
        sys.stdout.write(orjson.dumps(envelope).decode() + "\n")
        return EXIT_OK
    if ok:
        sys.stdout.write(text)
        if sys.stdout.isatty():
            sys.stdout.write("\n")
        return EXIT_OK
    print(f"{code}: {message}", file=sys.stderr)
    return EXIT_TOOL_ERROR


def cmd_call(args: argparse.Namespace) -> int:
    import asyncio
    import uuid

    try:
        arguments = orjson.loads(args.arguments)
    except orjson.JSONDecodeError as exc:
        print(f"sessionq call: ARGS is not JSON: {exc}", file=sys.stderr)
        return EXIT_USAGE
    request_id = str(uuid.uuid4())
    if args.bootstrap:
        from worker.client import call_once

        reply = asyncio.run(
            call_once(
                args.bootstrap,
                args.tool,
                arguments,
                session_id=args.caller,
                step_seq=args.step_seq,
                timeout_ms=args.timeout_ms,
                request_id=request_id,
            )
        )
    else:
        if args.data is None:
            print("sessionq call: give --data DIR or --bootstrap HOST:PORT", file=sys.stderr)
            return EXIT_USAGE
        from indexer.query.service import StoreQueryService
        from worker.envelopes import reply_for
        from worker.handler import Caller, ToolService

        service = StoreQueryService(args.data)
        try:
            result = asyncio.run(
                ToolService(service).call(
                    args.tool,
                    arguments,
                    Caller(args.caller, args.step_seq),
                    timeout_ms=args.timeout_ms,
                )
            )
        finally:
            service.close()
        reply = reply_for(request_id, result)
    return _print_reply(
        args,
        request_id,
        reply.ok,
        reply.text or "",
        reply.to_json(),
        reply.error.code if reply.error else None,
        reply.error.message if reply.error else None,
    )


def cmd_manifest(args: argparse.Namespace) -> int:
    from worker.handler import manifest_json

    sys.stdout.write(manifest_json() + "\n")
    return EXIT_OK


def _nonneg_int(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {value!r}") from None
    if n < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0: {n}")
    return n


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sessionq", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("ingest", help="index dsh session logs (files or dsh roots)")
    p.add_argument("paths", nargs="+", help="session log files or directories")
    _data_arg(p)
    p.set_defaults(handler=cmd_ingest)

    p = sub.add_parser("stats", help="what a data directory holds")
    _data_arg(p)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=cmd_stats)

    p = sub.add_parser("call", help="call one tool as a caller session")
    p.add_argument("tool", help="session_search, session_event_search, session_trace, ...")
    p.add_argument("arguments", help="the tool arguments as a JSON object")
    data_env = env("data")
    p.add_argument(
        "--data",
        type=Path,
        default=Path(data_env) if data_env else None,
        help="data directory (SESSIONQ_DATA)",
    )
    p.add_argument(
        "--bootstrap",
        default=env("bootstrap"),
        help="call through Kafka instead (SESSIONQ_BOOTSTRAP)",
    )
    p.add_argument("--caller", required=True, help="the trusted caller session id")
    p.add_argument(
        "--step-seq", type=_nonneg_int, default=None, help="seq of the caller's current step/start"
    )
    p.add_argument("--timeout-ms", type=_nonneg_int, default=None, help="call deadline")
    p.add_argument("--json", action="store_true", help="print the reply envelope")
    p.set_defaults(handler=cmd_call)

    p = sub.add_parser("manifest", help="print the prompt section and tool definitions")
    p.set_defaults(handler=cmd_manifest)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler: Handler = args.handler
    return handler(args)


if __name__ == "__main__":
    sys.exit(main())
