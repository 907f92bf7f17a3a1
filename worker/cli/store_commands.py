"""Commands over a local data directory: ``ingest``, ``stats``, ``call``, ``manifest``,
``demo-corpus``."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import orjson

from indexer.settings import IngestSettings
from worker.cli.exits import EXIT_FAILED, EXIT_OK, EXIT_TOOL_ERROR, EXIT_USAGE, fail
from worker.cli.options import data_exists, settings_from
from worker.contract.envelopes import Reply, reply_for
from worker.settings import CallSettings, ManifestSettings, StatsSettings

if TYPE_CHECKING:
    from indexer.store.lease import Holder


def cmd_ingest(args: argparse.Namespace) -> int:
    from indexer.logs.importers.detect import discover_report
    from indexer.sources.files import ingest_files
    from indexer.sources.parallel import default_jobs
    from indexer.store.lease import WriterLease
    from indexer.store.records.store import Store
    from worker.cli import door

    settings = settings_from(IngestSettings, args)
    paths = [Path(p) for p in args.paths]
    missing = [p for p in paths if not p.exists() and not p.is_symlink()]
    for p in missing:
        print(f"sessionq ingest: no such file or directory: {p}", file=sys.stderr)
    forced = None if settings.format == "auto" else settings.format
    found = discover_report([p for p in paths if p.exists() or p.is_symlink()], forced)
    for skipped in found.skipped:  # FIFOs, sockets, devices, symlink loops: one note each
        print(f"sessionq ingest: {skipped}", file=sys.stderr)
    files = found.sources
    if not files and missing:
        return EXIT_FAILED
    data = door.data_dir(args.command, settings.data)
    with WriterLease(data, "ingest").turn(on_wait=_waiting(data)):
        store = Store(
            data,
            failpoints=settings.failpoints,
            redaction=settings.redaction,
            batch_bytes=settings.commit_every_bytes,
        )
        bar = None
        if sys.stderr.isatty() and files:
            from tqdm import tqdm

            bar = tqdm(total=len(files), unit="file", file=sys.stderr, desc="ingest")
        try:
            summary = ingest_files(
                store,
                files,
                commit_every_events=settings.commit_every,
                jobs=default_jobs(settings.jobs),
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
    side_files = [r for r in summary.rejected if r.skipped]
    rejected = [r for r in summary.rejected if not r.skipped]
    if side_files:
        print(f"skipped {len(side_files)} files with no conversation:")
        for r in side_files:
            print(f"  {r.reason}")
    if rejected:
        print(f"rejected {len(rejected)} files:")
        for r in rejected:
            print(f"  {r.reason}")
    if not files:
        print("no session logs found", file=sys.stderr)
        return EXIT_FAILED
    if summary.lost is not None:
        # A lost batch is the store's failure, not the files': the cause in one line.
        print(
            f"sessionq ingest: {summary.lost_files} files not stored: {summary.lost}",
            file=sys.stderr,
        )
        return EXIT_FAILED
    return EXIT_OK if summary.readable else EXIT_FAILED


def _waiting(data: Path) -> Callable[[Holder], None]:
    """Told once when another process writes ``data``: a server hands the data dir over
    between two of its batches; a Kafka indexer never does (its dir is a replica)."""

    def told(holder: Holder) -> None:
        if holder.role == "indexer":
            fail(
                "ingest",
                f"{data} is a replica written by a Kafka indexer ({holder.describe()}): ingest"
                " into another data dir, or publish the logs (sessionq publish)",
            )
        print(
            f"sessionq ingest: waiting for the writer of {data} ({holder.describe()}) to hand"
            " it over...",
            file=sys.stderr,
            flush=True,
        )

    return told


def cmd_stats(args: argparse.Namespace) -> int:
    from indexer.sources.partitions.status import is_node_dir, node_stats
    from indexer.stats import store_stats

    settings = settings_from(StatsSettings, args)
    if is_node_dir(settings.data):  # a partitioned node's dir: its partitions' stores
        shown = node_stats(settings.data)
    else:
        if not data_exists(args.command, settings.data):
            return EXIT_USAGE
        shown = store_stats(settings.data).to_json()
    if args.json:
        sys.stdout.write(orjson.dumps(shown, option=orjson.OPT_INDENT_2).decode() + "\n")
        return EXIT_OK
    from worker.cli.stats_text import stats_lines

    print("\n".join(stats_lines(shown)))
    return EXIT_OK


def _quiet_internal_log(verbose: bool) -> None:
    """The sanitizer's diagnostics are for operators, not the model's text: in ``call``
    they reach stderr only with ``--verbose``."""
    if verbose:
        from worker.cli.logs import configure_logging

        configure_logging("text", "DEBUG")
    else:
        logging.getLogger("sessionq").addHandler(logging.NullHandler())
        logging.getLogger("sessionq").propagate = False


def _print_reply(args: argparse.Namespace, reply: Reply) -> int:
    if args.json:
        sys.stdout.write(orjson.dumps(reply.to_json()).decode() + "\n")
        return EXIT_OK
    if reply.ok:
        # The tool's text never ends in a newline; a line of output does (``--json`` is
        # the exact reply for scripts).
        sys.stdout.write((reply.text or "") + "\n")
        return EXIT_OK
    assert reply.error is not None
    print(f"{reply.error.code}: {reply.error.message}", file=sys.stderr)
    return EXIT_TOOL_ERROR


async def _call_over_kafka(
    settings: CallSettings, args: argparse.Namespace, arguments: object, request_id: str
) -> Reply:
    from worker.cli import door
    from worker.contract.errors import CALLER_UNAUTHENTICATED, TOOL_TIMEOUT
    from worker.host.client import call_once
    from worker.host.preflight import caller_warnings, refusal_hint, timeout_hint

    assert settings.kafka is not None
    signer = door.signing_key(args.command, settings.key_id, settings.signing_key)
    warnings = caller_warnings(signer, args.workspace)
    for warning in warnings:
        print(f"sessionq call: warning: {warning}", file=sys.stderr)
    cap = settings.tools.max_timeout_ms
    reply = await call_once(
        settings.kafka,
        args.tool,
        arguments,
        session_id=args.caller,
        step_seq=args.step_seq,
        timeout_ms=args.timeout_ms if args.timeout_ms is not None else cap,
        request_id=request_id,
        signer=signer,
        workspace=args.workspace,
    )
    if reply.error is not None and reply.error.code == CALLER_UNAUTHENTICATED:
        hint = refusal_hint(signer, args.workspace)
        said = "the warning above" if hint in warnings else hint  # each sentence once
        print(f"sessionq call: likely cause: {said}", file=sys.stderr)
    elif reply.error is not None and reply.error.code == TOOL_TIMEOUT:
        print(f"sessionq call: likely cause: {timeout_hint(args.caller)}", file=sys.stderr)
    return reply


def _is_utf8(text: str) -> bool:
    """False for argv text holding undecodable bytes (``surrogateescape`` lone surrogates)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def cmd_call(args: argparse.Namespace) -> int:
    from indexer.query.service import StoreQueryService
    from worker.calls.pipeline import Pipeline
    from worker.tools.access import Caller

    for flag, value in (("--caller", args.caller), ("--workspace", args.workspace)):
        if value is not None and not _is_utf8(value):  # argv bytes that are not UTF-8
            fail(args.command, f"{flag} is not valid UTF-8")
    try:
        arguments = orjson.loads(args.arguments)
    except orjson.JSONDecodeError as exc:
        fail(args.command, f"ARGS is not JSON: {exc}")
    settings = settings_from(CallSettings, args)
    request_id = str(uuid.uuid4())
    _quiet_internal_log(args.verbose)
    if settings.kafka is not None:
        reply = asyncio.run(_call_over_kafka(settings, args, arguments, request_id))
        return _print_reply(args, reply)
    if settings.data is None:
        fail(args.command, "give --data DIR or --bootstrap HOST:PORT")
    if not data_exists(args.command, settings.data):
        return EXIT_USAGE
    service = StoreQueryService(settings.data)
    try:
        pipeline = Pipeline(service, settings.tools)
        caller = Caller(args.caller, args.step_seq)
        result = asyncio.run(
            pipeline.call(args.tool, arguments, caller, timeout_ms=args.timeout_ms)
        )
    finally:
        service.close()
    return _print_reply(args, reply_for(request_id, result))


def cmd_manifest(args: argparse.Namespace) -> int:
    from worker.manifest import manifest_json

    settings = settings_from(ManifestSettings, args)
    sys.stdout.write(manifest_json(settings.tools) + "\n")
    return EXIT_OK


def cmd_demo_corpus(args: argparse.Namespace) -> int:
    from worker.devtools.demo_corpus import cli_main

    return cli_main(args.out, args.sessions, args.seed)
