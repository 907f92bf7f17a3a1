"""The Kafka roles: ``topics create``, ``indexer``, ``worker``, ``publish``."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from indexer.metrics import Metrics
from indexer.settings import IndexerSettings
from worker.cli.exits import EXIT_FAILED, EXIT_OK
from worker.cli.options import settings_from
from worker.cli.runtime import on_terminate, run_loop, serve_ops, setup_logging, wait_for_index
from worker.settings import PublishSettings, TopicsSettings, WorkerSettings


def cmd_topics(args: argparse.Namespace) -> int:
    from worker.host.topics import ensure_topics, partition_warning

    settings = settings_from(TopicsSettings, args)
    if settings.kafka.secured and settings.replication_factor == 1:
        print(
            f"sessionq topics create: warning: {settings.kafka.security_protocol} looks like a"
            " production cluster but --replication-factor is 1 (one broker loss loses data)",
            file=sys.stderr,
        )

    async def main() -> tuple[dict[str, str], str | None]:
        result = await ensure_topics(
            settings.kafka,
            settings.partitions,
            replication_factor=settings.replication_factor,
            min_insync_replicas=settings.min_insync_replicas,
            events_retention_days=settings.events_retention_days,
        )
        existing = [name for name, status in result.items() if status == "exists"]
        return result, await partition_warning(settings.kafka, settings.partitions, existing)

    result, warning = asyncio.run(main())
    for name, status in result.items():
        print(f"{name}: {status}")
    if warning is not None:
        print(f"sessionq topics create: warning: {warning}", file=sys.stderr)
    return EXIT_OK


def cmd_indexer(args: argparse.Namespace) -> int:
    from indexer.sources.kafka import Indexer
    from worker.cli import door

    settings = settings_from(IndexerSettings, args)
    door.usable_data_dir(args.command, settings.data)
    ops = door.metrics_socket(args.command, settings)
    setup_logging(settings)

    async def main() -> None:
        metrics = Metrics("indexer")
        indexer = Indexer(settings, metrics=metrics)
        ops_server = None
        try:
            await indexer.start()  # Kafka first: the data dir is created once it answered
            on_terminate(indexer.stop)
            ops_server = await serve_ops(ops, metrics, indexer.caught_up, indexer.readiness_notes)
            await indexer.run()
        finally:
            await indexer.close()
            if ops_server is not None:
                await ops_server.close()

    run_loop(main(), settings.event_loop)
    return EXIT_OK


def cmd_worker(args: argparse.Namespace) -> int:
    from indexer.query.service import StoreQueryService
    from worker.cli import door
    from worker.transports.kafka.worker import Worker

    settings = settings_from(WorkerSettings, args)
    door.keyring(args.command, settings.keyring)
    ops = door.metrics_socket(args.command, settings)
    setup_logging(settings)

    async def main() -> None:
        service = StoreQueryService(settings.data)
        metrics = Metrics("worker")
        worker = Worker(settings, service, metrics=metrics)
        ops_server = await serve_ops(ops, metrics, worker.ready, worker.readiness_notes)
        if settings.wait_for_index:
            await wait_for_index(settings.data)
        await worker.start()
        on_terminate(worker.stop)
        try:
            await worker.run()
        finally:
            await worker.close()
            service.close()
            if ops_server is not None:
                await ops_server.close()

    run_loop(main(), settings.event_loop)
    return EXIT_OK


def cmd_publish(args: argparse.Namespace) -> int:
    from indexer.kafka.client import Producer
    from worker.cli import door
    from worker.host.publisher import Publisher

    settings = settings_from(PublishSettings, args)
    paths = door.session_roots("publish", [Path(p) for p in args.paths], flag="PATH")
    setup_logging(settings)
    kafka = settings.kafka

    async def main() -> int:
        producer = Producer(kafka, client_id="sessionq-publisher", linger_ms=5)
        await producer.start()
        forced = None if settings.format == "auto" else settings.format
        publisher = Publisher(producer, kafka.events_topic, format=forced)
        on_terminate(publisher.stop)
        try:
            await publisher.run(paths, follow=args.follow)
        finally:
            await producer.stop()
        s = publisher.summary
        print(f"published {s.sessions} sessions, {s.events} events in {s.records} records")
        if publisher.rejected:  # each was logged with its reason when it was met
            print(f"  not published: {len(publisher.rejected)} (each named above)")
        return EXIT_OK if s.sessions or not publisher.rejected else EXIT_FAILED

    return run_loop(main(), settings.event_loop)
