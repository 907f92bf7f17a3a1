"""Which function runs each command: the one place that names a command's module.

A command's module is imported when that command runs, never to build the parser, so
``sessionq --help`` and a one-shot command load only what they use (the Kafka client,
the MCP SDK, the HTTP servers, the index are imported by the commands that need them).
Keys are the command paths of ``worker.cli.parser``; the two are checked against each
other by ``tests/worker/test_cli_startup.py``.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable, Mapping
from typing import Final

Handler = Callable[[argparse.Namespace], int]

HANDLERS: Final[Mapping[str, str]] = {
    "ingest": "worker.cli.store_commands:cmd_ingest",
    "stats": "worker.cli.store_commands:cmd_stats",
    "call": "worker.cli.store_commands:cmd_call",
    "manifest": "worker.cli.store_commands:cmd_manifest",
    "demo-corpus": "worker.cli.store_commands:cmd_demo_corpus",
    "topics create": "worker.cli.kafka_commands:cmd_topics",
    "indexer": "worker.cli.kafka_commands:cmd_indexer",
    "worker": "worker.cli.kafka_commands:cmd_worker",
    "publish": "worker.cli.kafka_commands:cmd_publish",
    "keys generate": "worker.cli.keys_command:cmd_keys_generate",
    "snapshot create": "worker.cli.snapshot_command:cmd_snapshot_create",
    "snapshot restore": "worker.cli.snapshot_command:cmd_snapshot_restore",
    "delete": "worker.cli.delete_command:cmd_delete",
    "node": "worker.cli.node_command:cmd_node",
    "mcp": "worker.cli.mcp_command:cmd_mcp",
    "serve": "worker.cli.serve_command:cmd_serve",
}


def handler(path: str) -> Handler:
    """The function that runs the command at ``path``, its module imported now."""
    module, _, name = HANDLERS[path].partition(":")
    run: Handler = getattr(importlib.import_module(module), name)
    return run
