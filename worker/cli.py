"""``sessionq`` command line: thin parse -> settings -> run.

Every flag can also be set through an environment variable ``SESSIONQ_<FLAG>`` (upper
case, dashes as underscores); an explicit flag wins.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import orjson

if TYPE_CHECKING:
    from aiohttp.web import AppRunner

    from indexer.metrics import Metrics
    from indexer.settings import KafkaSettings
    from worker.http_ops import Readiness

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

    paths = [Path(p) for p in args.paths]
    missing = [p for p in paths if not p.exists()]
    for p in missing:
        print(f"sessionq ingest: no such file or directory: {p}", file=sys.stderr)
    files = list(discover([p for p in paths if p.exists()]))
    if not files and missing:
        return EXIT_FAILED
    store = Store(args.data)
    bar = None
    if sys.stderr.isatty() and files:
        from tqdm import tqdm

        bar = tqdm(total=len(files), unit="file", file=sys.stderr, desc="ingest")
    try:
        summary = ingest_files(
            store,
            files,
            commit_every_events=args.commit_every,
            on_file=(lambda _p: bar.update(1)) if bar else None,
        )
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

    if not _data_exists(args):
        return EXIT_USAGE
    stats = store_stats(args.data)
    if args.json:
        sys.stdout.write(orjson.dumps(stats.to_json(), option=orjson.OPT_INDENT_2).decode() + "\n")
        return EXIT_OK
    for key, value in stats.to_json().items():
        print(f"{key}: {value}")
    return EXIT_OK


def _data_exists(args: argparse.Namespace) -> bool:
    from indexer.storage import sqlite_path

    if sqlite_path(args.data).exists():
        return True
    print(
        f"sessionq {args.command}: no sessionq data directory at {args.data}"
        " (create one with `sessionq ingest`)",
        file=sys.stderr,
    )
    return False


def _quiet_internal_log(args: argparse.Namespace) -> None:
    """The sanitizer's diagnostics are for operators, not the model's text: in ``call``
    they reach stderr only with ``--verbose``."""
    import logging

    if args.verbose:
        from worker.logs import configure_logging

        configure_logging("text", "DEBUG")
    else:
        logging.getLogger("sessionq").addHandler(logging.NullHandler())
        logging.getLogger("sessionq").propagate = False


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
        if not _data_exists(args):
            return EXIT_USAGE
        _quiet_internal_log(args)
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


# ---- Kafka roles -------------------------------------------------------------------------------
def _kafka(args: argparse.Namespace) -> KafkaSettings:
    from indexer.settings import KafkaSettings

    return KafkaSettings(bootstrap=args.bootstrap)


def _setup_logging(args: argparse.Namespace) -> None:
    from worker.logs import configure_logging

    configure_logging(getattr(args, "log_format", "text"), getattr(args, "log_level", "INFO"))


async def _serve_ops(listen: str | None, metrics: Metrics, ready: Readiness) -> AppRunner | None:
    """Start ``/metrics``, ``/healthz``, ``/readyz`` when a listen address is configured."""
    if not listen:
        return None
    from aiohttp import web

    from worker.http_ops import ops_routes, start_server

    app = web.Application()
    app.add_routes(ops_routes(metrics, ready))
    runner, port = await start_server(app, listen)
    print(f"metrics on {listen.rpartition(':')[0]}:{port}", file=sys.stderr)
    return runner


def cmd_topics(args: argparse.Namespace) -> int:
    import asyncio

    from worker.topics import ensure_topics

    result = asyncio.run(ensure_topics(_kafka(args), args.partitions))
    for name, status in result.items():
        print(f"{name}: {status}")
    return EXIT_OK


def cmd_indexer(args: argparse.Namespace) -> int:
    import asyncio

    from indexer.consumer import Indexer
    from indexer.metrics import Metrics
    from indexer.settings import IndexerSettings

    _setup_logging(args)
    settings = IndexerSettings(data=args.data)

    async def main() -> None:
        metrics = Metrics("indexer")
        indexer = Indexer(settings, _kafka(args), metrics=metrics)
        await indexer.start()
        _on_terminate(indexer.stop)
        runner = await _serve_ops(args.metrics_listen, metrics, indexer.caught_up)
        try:
            await indexer.run()
        finally:
            await indexer.close()
            if runner is not None:
                await runner.cleanup()

    asyncio.run(main())
    return EXIT_OK


def cmd_worker(args: argparse.Namespace) -> int:
    import asyncio

    from indexer.metrics import Metrics
    from indexer.query.service import StoreQueryService
    from worker.consumer import Worker
    from worker.handler import ToolService, ToolServiceConfig
    from worker.settings import WorkerSettings

    _setup_logging(args)
    settings = WorkerSettings(
        data=args.data,
        group=args.group,
        max_search_results=args.max_search_results,
        search_timeout_ms=args.search_timeout_ms,
        max_timeout_ms=args.max_timeout_ms,
    )

    async def main() -> None:
        service = StoreQueryService(settings.data)
        tools = ToolService(
            service,
            ToolServiceConfig(
                maxSearchResults=settings.max_search_results,
                searchTimeoutMs=settings.search_timeout_ms,
            ),
        )
        metrics = Metrics("worker")
        worker = Worker(settings, _kafka(args), service, tools, metrics=metrics)
        runner = await _serve_ops(args.metrics_listen, metrics, worker.ready)
        if args.wait_for_index:
            await _wait_for_index(settings.data)
        await worker.start()
        _on_terminate(worker.stop)
        try:
            await worker.run()
        finally:
            await worker.close()
            service.close()
            if runner is not None:
                await runner.cleanup()

    asyncio.run(main())
    return EXIT_OK


def cmd_publish(args: argparse.Namespace) -> int:
    import asyncio

    from worker.kafka import Producer
    from worker.publisher import Publisher

    _setup_logging(args)
    kafka = _kafka(args)

    async def main() -> int:
        producer = Producer(kafka.bootstrap, client_id="sessionq-publisher", linger_ms=5)
        await producer.start()
        publisher = Publisher(producer, kafka.events_topic)
        _on_terminate(publisher.stop)
        try:
            await publisher.run([Path(p) for p in args.paths], follow=args.follow)
        finally:
            await producer.stop()
        s = publisher.summary
        print(f"published {s.sessions} sessions, {s.events} events in {s.records} records")
        for reason in publisher.rejected.values():
            print(f"  not published: {reason}")
        return EXIT_OK if s.sessions or not publisher.rejected else EXIT_FAILED

    return asyncio.run(main())


def cmd_serve(args: argparse.Namespace) -> int:
    import asyncio

    from worker.handler import ToolServiceConfig
    from worker.http_ops import start_server
    from worker.serve import Embedded

    _setup_logging(args)
    config = ToolServiceConfig(
        maxSearchResults=args.max_search_results, searchTimeoutMs=args.search_timeout_ms
    )

    async def main() -> None:
        embedded = Embedded(
            [Path(p) for p in args.sessions],
            args.data,
            config=config,
            max_timeout_ms=args.max_timeout_ms,
        )
        runner, port = await start_server(embedded.app(), args.listen)
        host = args.listen.rpartition(":")[0].strip("[]")
        base = f"http://{host}:{port}"
        print(f"sessionq serving on {base} (ingesting...)", file=sys.stderr, flush=True)
        bar = None
        if sys.stderr.isatty():
            from tqdm import tqdm

            bar = tqdm(unit="record", file=sys.stderr, desc="ingest")

        def progress(done: int, total: int) -> None:
            if bar is not None:
                bar.total = total
                bar.n = done
                bar.refresh()

        try:
            await embedded.initial_ingest(progress)
            if bar is not None:
                bar.close()
            s = embedded.status
            print(
                f"ready: {s.applied_records} records applied, {len(s.rejected)} files rejected;"
                f" console {base}/",
                flush=True,
            )
            for reason in s.rejected.values():
                print(f"  rejected: {reason}", file=sys.stderr)
            watch = asyncio.ensure_future(embedded.watch(args.poll_ms / 1000))

            async def _stop() -> None:
                watch.cancel()

            _on_terminate(_stop)
            with contextlib.suppress(asyncio.CancelledError):
                await watch
        finally:
            await runner.cleanup()
            embedded.close()

    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        return EXIT_OK
    return EXIT_OK


def _on_terminate(stop: Callable[[], Awaitable[None]]) -> None:
    """SIGTERM/SIGINT ask the role to stop: in-flight work finishes, offsets commit, the
    consumer leaves its group."""
    import asyncio
    import signal

    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, lambda: asyncio.ensure_future(stop()))


async def _wait_for_index(data: Path) -> None:
    """Block until this data dir's indexer has caught up once (a replica joins the worker
    group only with a complete index)."""
    import asyncio

    from indexer.storage import sqlite_path
    from indexer.store.sqlite_tables import connect, indexer_caught_up

    print("waiting for the indexer to catch up...", file=sys.stderr, flush=True)
    while True:
        if sqlite_path(data).exists():
            conn = connect(sqlite_path(data), readonly=True)
            try:
                if indexer_caught_up(conn):
                    return
            finally:
                conn.close()
        await asyncio.sleep(0.5)


def cmd_demo_corpus(args: argparse.Namespace) -> int:
    from worker.demo_corpus import cli_main

    return cli_main(args.out, args.sessions, args.seed)


def _bootstrap_arg(p: argparse.ArgumentParser) -> None:
    default = env("bootstrap")
    p.add_argument(
        "--bootstrap",
        default=default,
        required=default is None,
        help="Kafka bootstrap address host:port (SESSIONQ_BOOTSTRAP)",
    )


def _env_int(name: str, default: int) -> int:
    raw = env(name)
    if raw is None:
        return default
    try:
        return int(raw)
    except ValueError:
        raise SystemExit(
            f"sessionq: SESSIONQ_{name.upper()} must be an integer, got {raw!r}"
        ) from None


def _log_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--log-format",
        choices=["text", "json"],
        default=env("log_format", "text"),
        help="log lines as text or JSON (SESSIONQ_LOG_FORMAT)",
    )
    p.add_argument(
        "--log-level",
        default=env("log_level", "INFO"),
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help="SESSIONQ_LOG_LEVEL",
    )


def _ops_args(p: argparse.ArgumentParser, default_listen: str) -> None:
    p.add_argument(
        "--metrics-listen",
        default=env("metrics_listen", default_listen),
        help="HOST:PORT for /metrics, /healthz, /readyz; empty disables (SESSIONQ_METRICS_LISTEN)",
    )
    _log_args(p)


def _tool_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--max-search-results",
        type=_positive_int,
        default=_env_int("max_search_results", 100),
        help="SESSIONQ_MAX_SEARCH_RESULTS",
    )
    p.add_argument(
        "--search-timeout-ms",
        type=_positive_int,
        default=_env_int("search_timeout_ms", 30000),
        help="SESSIONQ_SEARCH_TIMEOUT_MS",
    )
    p.add_argument(
        "--max-timeout-ms",
        type=_positive_int,
        default=_env_int("max_timeout_ms", 60000),
        help="cap on a request's timeout_ms (SESSIONQ_MAX_TIMEOUT_MS)",
    )


def _nonneg_int(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {value!r}") from None
    if n < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0: {n}")
    return n


def _positive_int(value: str) -> int:
    n = _nonneg_int(value)
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1: {n}")
    return n


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sessionq", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("ingest", help="index dsh session logs (files or dsh roots)")
    p.add_argument("paths", nargs="+", help="session log files or directories")
    _data_arg(p)
    p.add_argument(
        "--commit-every",
        type=_positive_int,
        default=int(env("commit_every", "200000") or 200000),
        help="commit after this many events (SESSIONQ_COMMIT_EVERY)",
    )
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
    p.add_argument("--verbose", action="store_true", help="print internal diagnostics")
    p.set_defaults(handler=cmd_call)

    p = sub.add_parser("topics", help="Kafka topics")
    tsub = p.add_subparsers(dest="topics_command", required=True)
    tp = tsub.add_parser("create", help="create sessionq's topics (idempotent)")
    _bootstrap_arg(tp)
    tp.add_argument("--partitions", type=_positive_int, default=int(env("partitions", "3") or 3))
    tp.set_defaults(handler=cmd_topics)

    p = sub.add_parser("indexer", help="consume the events topic into a data directory")
    _bootstrap_arg(p)
    _data_arg(p)
    _ops_args(p, "0.0.0.0:9464")
    p.set_defaults(handler=cmd_indexer)

    p = sub.add_parser("worker", help="answer tool calls from the requests topic")
    _bootstrap_arg(p)
    _data_arg(p)
    p.add_argument("--group", default=env("group", "sessionq-workers"), help="consumer group")
    p.add_argument(
        "--wait-for-index",
        action=argparse.BooleanOptionalAction,
        default=(env("wait_for_index", "false") or "false").lower() in ("1", "true", "yes"),
        help="join the group only after this data dir's indexer caught up once"
        " (SESSIONQ_WAIT_FOR_INDEX)",
    )
    _tool_args(p)
    _ops_args(p, "0.0.0.0:9465")
    p.set_defaults(handler=cmd_worker)

    p = sub.add_parser("publish", help="publish dsh session logs to the events topic")
    p.add_argument("paths", nargs="+", help="session log files or dsh roots")
    _bootstrap_arg(p)
    p.add_argument("--follow", action="store_true", help="keep publishing appended events")
    p.set_defaults(handler=cmd_publish)

    p = sub.add_parser("serve", help="embedded mode: ingest + watch logs, HTTP API, no broker")
    p.add_argument(
        "--sessions",
        nargs="+",
        required=env("sessions") is None,
        default=(env("sessions") or "").split(os.pathsep) if env("sessions") else None,
        help="dsh session root(s) or log files (SESSIONQ_SESSIONS, os.pathsep-separated)",
    )
    _data_arg(p)
    p.add_argument("--listen", default=env("listen", "127.0.0.1:8765"), help="HTTP HOST:PORT")
    p.add_argument(
        "--poll-ms",
        type=_positive_int,
        default=int(env("poll_ms", "200") or 200),
        help="how often the logs are re-scanned",
    )
    _tool_args(p)
    _log_args(p)
    p.set_defaults(handler=cmd_serve)

    p = sub.add_parser("demo-corpus", help="write a demo dsh session root (make run uses it)")
    p.add_argument("--out", type=Path, required=True, help="output directory")
    p.add_argument("--sessions", type=_positive_int, default=24, help="number of sessions (>= 8)")
    p.add_argument("--seed", type=int, default=7, help="random seed (same seed, same files)")
    p.set_defaults(handler=cmd_demo_corpus)

    p = sub.add_parser("manifest", help="print the prompt section and tool definitions")
    p.set_defaults(handler=cmd_manifest)
    return parser


def _check_env_defaults(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """argparse never checks defaults; values that came from SESSIONQ_* must obey the
    same choices as flags, and fail at start naming the setting."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            chosen = getattr(args, action.dest, None)
            if chosen in action.choices:
                _check_env_defaults(action.choices[chosen], args)
            continue
        if action.choices is None or action.dest == "help":
            continue
        value = getattr(args, action.dest, None)
        if value is not None and value not in action.choices:
            name = "SESSIONQ_" + action.dest.upper()
            parser.error(f"{name}={value!r} is not one of {', '.join(map(str, action.choices))}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    _check_env_defaults(parser, args)
    handler: Handler = args.handler
    return handler(args)


if __name__ == "__main__":
    sys.exit(main())
