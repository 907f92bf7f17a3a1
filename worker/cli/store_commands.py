"""Commands over a local data directory: ``ingest``, ``stats``, ``call``, ``manifest``,
``demo-corpus``."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
import uuid
from pathlib import Path

import orjson

from indexer.settings import IngestSettings
from worker.cli.options import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_TOOL_ERROR,
    EXIT_USAGE,
    data_exists,
    fail,
    settings_from,
)
from worker.contract.envelopes import Reply, reply_for
from worker.settings import CallSettings, ManifestSettings, StatsSettings


def cmd_ingest(args: argparse.Namespace) -> int:
    from indexer.ingest import ingest_files
    from indexer.ingest_parallel import default_jobs
    from indexer.logs.importers.detect import discover_sources
    from indexer.store.records.store import Store

    settings = settings_from(IngestSettings, args)
    paths = [Path(p) for p in args.paths]
    missing = [p for p in paths if not p.exists()]
    for p in missing:
        print(f"sessionq ingest: no such file or directory: {p}", file=sys.stderr)
    forced = None if settings.format == "auto" else settings.format
    files = discover_sources([p for p in paths if p.exists()], forced)
    if not files and missing:
        return EXIT_FAILED
    store = Store(settings.data, failpoints=settings.failpoints, redaction=settings.redaction)
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
    if summary.rejected:
        print(f"rejected {len(summary.rejected)} files:")
        for r in summary.rejected:
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


def cmd_stats(args: argparse.Namespace) -> int:
    from indexer.stats import store_stats

    settings = settings_from(StatsSettings, args)
    if not data_exists(args.command, settings.data):
        return EXIT_USAGE
    stats = store_stats(settings.data)
    if args.json:
        sys.stdout.write(orjson.dumps(stats.to_json(), option=orjson.OPT_INDENT_2).decode() + "\n")
        return EXIT_OK
    for key, value in stats.to_json().items():
        print(f"{key}: {value}")
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
        sys.stdout.write(reply.text or "")
        if sys.stdout.isatty():
            sys.stdout.write("\n")
        return EXIT_OK
    assert reply.error is not None
    print(f"{reply.error.code}: {reply.error.message}", file=sys.stderr)
    return EXIT_TOOL_ERROR


async def _call_over_kafka(
    settings: CallSettings, args: argparse.Namespace, arguments: object, request_id: str
) -> Reply:
    from worker.authn.tokens import CallerSigner
    from worker.kafka.client import call_once

    assert settings.kafka is not None
    signer = None
    if settings.signing_key is not None:
        if settings.key_id is None:
            fail(args.command, "--signing-key needs --key-id (SESSIONQ_KEY_ID)")
        signer = CallerSigner.from_file(settings.key_id, settings.signing_key)
    cap = settings.tools.max_timeout_ms
    return await call_once(
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


def _is_utf8(text: str) -> bool:
    """False for argv text holding undecodable bytes (``surrogateescape`` lone surrogates)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def cmd_call(args: argparse.Namespace) -> int:
    from indexer.query.service import StoreQueryService
    from worker.pipeline import Pipeline
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
    if settings.kafka is not None:
        reply = asyncio.run(_call_over_kafka(settings, args, arguments, request_id))
        return _print_reply(args, reply)
    if settings.data is None:
        fail(args.command, "give --data DIR or --bootstrap HOST:PORT")
    if not data_exists(args.command, settings.data):
        return EXIT_USAGE
    _quiet_internal_log(args.verbose)
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
