"""``sessionq node``: a partitioned node (``worker.transports.kafka.node``): the indexer and the
worker of the partitions the group gives it, over one data dir of partition stores."""

from __future__ import annotations

import argparse

from worker.cli.exits import EXIT_OK, fail
from worker.cli.options import settings_from


def cmd_node(args: argparse.Namespace) -> int:
    from indexer.metrics import Metrics
    from worker.cli import door
    from worker.cli.runtime import on_terminate, run_loop, serve_ops, setup_logging
    from worker.settings_node import NodeSettings
    from worker.transports.kafka.node import Node, NodeConfigError

    settings = settings_from(NodeSettings, args)
    door.keyring(args.command, settings.keyring)
    ops = door.metrics_socket(args.command, settings)
    setup_logging(settings)

    async def main() -> None:
        metrics = Metrics("node")
        node = Node(settings, metrics=metrics)
        on_terminate(node.stop)
        ops_server = await serve_ops(ops, metrics, node.ready, node.readiness_notes)
        try:
            try:
                await node.start()
            except NodeConfigError as exc:
                fail(args.command, exc.message)
            await node.run()
        finally:
            await node.close()
            if ops_server is not None:
                await ops_server.close()

    run_loop(main(), settings.event_loop)
    return EXIT_OK
