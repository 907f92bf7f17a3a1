"""Helpers for the partitioned-node tests: node subprocesses (``sessionq node``), what
each node owns (its ``node.json``), what each partition store holds, cross-workspace
test sessions, and the reference answers of a full replica."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from indexer.kafka.node_group import partition_for
from indexer.model import SessionHeader
from indexer.store.layout import sqlite_path
from tests.builders import header, user
from tests.kafka.harness import Call, Topics
from tests.kafka.processes import CliProcess, Processes
from tests.kafka.records import RawProducer, events_record, header_record, routing_key

NODE_ENV = {"SESSIONQ_BATCH_MS": "50", "SESSIONQ_LOG_LEVEL": "INFO"}


@dataclass
class NodeProc:
    """One ``sessionq node`` subprocess and its data dir."""

    proc: CliProcess
    data: Path

    def status(self) -> dict[str, Any]:
        try:
            raw: Any = orjson.loads((self.data / "node.json").read_bytes())
        except (OSError, orjson.JSONDecodeError):
            return {}
        return raw if isinstance(raw, dict) else {}

    def ready(self) -> set[int]:
        return set(self.status().get("ready", [])) if self.proc.alive() else set()

    def owned(self) -> set[int]:
        return set(self.status().get("owned", [])) if self.proc.alive() else set()

    def standby(self) -> set[int]:
        return set(self.status().get("standby", [])) if self.proc.alive() else set()


def spawn_node(
    procs: Processes,
    topics: Topics,
    group: str,
    data: Path,
    name: str,
    *extra: str,
    env: dict[str, str] | None = None,
    keyring: Path | None = None,
) -> NodeProc:
    """A node over ``topics``; without a ``keyring`` its callers are not authenticated."""
    trust = (
        ("--keyring", str(keyring))
        if keyring is not None
        else ("--insecure-unauthenticated-callers",)
    )
    proc = procs.spawn(
        name,
        "node",
        "--bootstrap",
        topics.bootstrap,
        "--data",
        str(data),
        "--group",
        group,
        *trust,
        *extra,
        env={**NODE_ENV, **(env or {})},
    )
    return NodeProc(proc, data)


def covered(nodes: Sequence[NodeProc], partitions: int) -> bool:
    """Every partition is ready on exactly one live node, and each live node owns what
    it says is ready (no rebalance in progress)."""
    seen: list[int] = []
    for node in nodes:
        ready, owned = node.ready(), node.owned()
        if ready != owned:
            return False
        seen.extend(ready)
    return sorted(seen) == list(range(partitions))


def partition_sessions(partition_dir: Path) -> dict[str, str]:
    """Session id -> workspace key of every session a partition store holds."""
    path = sqlite_path(partition_dir)
    if not path.exists():
        return {}
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
    try:
        rows = conn.execute("SELECT header FROM sessions").fetchall()
    finally:
        conn.close()
    out = {}
    for (raw,) in rows:
        h = SessionHeader.model_validate_json(raw)
        out[h.id] = h.routing_key
    return out


def store_headers(data_dir: Path) -> list[SessionHeader]:
    conn = sqlite3.connect(f"file:{sqlite_path(data_dir)}?mode=ro", uri=True, timeout=30)
    try:
        rows = conn.execute("SELECT header FROM sessions").fetchall()
    finally:
        conn.close()
    return [SessionHeader.model_validate_json(raw) for (raw,) in rows]


def workspaces_on_distinct_partitions(partitions: int, count: int) -> list[str]:
    """``count`` workspace keys that route to ``count`` different partitions."""
    out: dict[int, str] = {}
    i = 0
    while len(out) < count:
        key = f"/xw/ws-{i}"
        out.setdefault(partition_for(key.encode(), partitions), key)
        i += 1
    return list(out.values())


# Sessions whose lineage crosses workspaces (hence partitions): a root in ALPHA with a
# visible child and a child in BETA, which has a child back in ALPHA (hidden under a
# hidden node), and a child in GAMMA whose own parent (in BETA) is foreign to it.
X_ROOT, X_SIBLING, X_CHILD, X_GRANDCHILD, X_GAMMA = (
    "x-root",
    "x-sibling",
    "x-child-beta",
    "x-grandchild-alpha",
    "x-gamma",
)


def cross_sessions(alpha: str, beta: str, gamma: str) -> list[dict[str, Any]]:
    base = 1_780_000_000_000
    return [
        header(X_ROOT, cwd=alpha, created_at=base),
        header(X_SIBLING, cwd=alpha, created_at=base + 1000, parent=X_ROOT),
        header(X_CHILD, cwd=beta, created_at=base + 2000, parent=X_ROOT),
        header(X_GRANDCHILD, cwd=alpha, created_at=base + 3000, parent=X_CHILD),
        header(X_GAMMA, cwd=gamma, created_at=base + 4000, parent=X_CHILD),
    ]


async def publish_cross_sessions(
    producer: RawProducer, topic: str, headers: Sequence[dict[str, Any]]
) -> None:
    for h in headers:
        key = routing_key(h)
        await producer.send_json(topic, header_record(h), key=key)
        events = [user(0, f"cross workspace kestrel {h['id']}")]
        await producer.send_json(topic, events_record(str(h["id"]), events), key=key)


def calls_for(callers: dict[str, str]) -> list[Call]:
    """The five tools for each (caller id -> workspace key), keyed by the workspace."""
    out = []
    for caller, key in callers.items():
        out += [
            Call("session_search", {"query": "PONG"}, caller, routing_key=key),
            Call("session_search", {"query": "kestrel"}, caller, routing_key=key),
            Call("session_event_search", {"query": "file"}, caller, routing_key=key),
            Call("session_trace", {}, caller, routing_key=key),
            Call("session_event_trace", {"seq": 0}, caller, routing_key=key),
            Call("session_event_read", {"seq": 0, "after": 2}, caller, routing_key=key),
        ]
    return out
