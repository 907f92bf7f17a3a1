"""``sessionq node``: a partitioned node (``worker.kafka.node``): the indexer and the
worker of the partitions the group gives it, over one data dir of partition stores."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from worker.cli.options import (
    EXIT_OK,
    fail,
    nonneg_int,
    positive_int,
    redact_flag,
    setting,
    settings_from,
)

Flags = Callable[[argparse.ArgumentParser], None]


def add_node_command(
    sub: argparse._SubParsersAction[Any],
    *,
    bootstrap: Flags,
    tool_limits: Flags,
    ops: Flags,
    retention: Flags,
) -> None:
    p = sub.add_parser(
        "node", help="a partitioned node: index and answer the partitions the group gives it"
    )
    bootstrap(p)
    setting(p, "--data", type=Path, help="data directory (one store per partition inside)")
    setting(p, "--group", help="consumer group of the nodes")
    setting(p, "--keyring", type=Path, help="host public keys that may vouch for callers")
    setting(
        p,
        "--insecure-unauthenticated-callers",
        action="store_true",
        help="answer requests without a caller token (trusted networks only)",
    )
    setting(
        p,
        "--reply-topics",
        nargs="+",
        metavar="PATTERN",
        help="fnmatch patterns a request's reply_to must match (besides the replies topic)",
    )
    setting(
        p,
        "--standby-replicas",
        type=nonneg_int,
        help="warm copies of other nodes' partitions to keep (failover within seconds)",
    )
    setting(p, "--snapshot-to", help="publish per-partition snapshots here (dir or s3://…)")
    setting(
        p,
        "--snapshot-every",
        metavar="DURATION",
        help="publish snapshots this often (seconds, or 90s / 15m / 1h / 2d)",
    )
    setting(p, "--snapshot-keep", type=positive_int, help="complete snapshots kept per partition")
    setting(p, "--snapshot-from", help="restore gained partitions without a store from here")
    setting(
        p,
        "--session-timeout-ms",
        type=positive_int,
        help="a node silent this long loses its partitions",
    )
    retention(p)
    redact_flag(p)
    tool_limits(p)
    ops(p)
    p.set_defaults(handler=cmd_node)


def cmd_node(args: argparse.Namespace) -> int:
    import asyncio

    from indexer.metrics import Metrics
    from worker.cli.runtime import on_terminate, serve_ops, setup_logging
    from worker.kafka.node import Node, NodeConfigError
    from worker.settings_node import NodeSettings

    settings = settings_from(NodeSettings, args)
    setup_logging(settings)

    async def main() -> None:
        metrics = Metrics("node")
        node = Node(settings, metrics=metrics)
        on_terminate(node.stop)
        runner = await serve_ops(settings.metrics_listen, metrics, node.ready, node.readiness_notes)
        try:
            try:
                await node.start()
            except NodeConfigError as exc:
                fail(args.command, exc.message)
            await node.run()
        finally:
            await node.close()
            if runner is not None:
                await runner.cleanup()

    asyncio.run(main())
    return EXIT_OK
