"""What a node's data dir says about the node: ``node.json`` (written by the node on every
assignment and readiness change: the partition count, the partitions it owns, those
ready to answer, its standby copies) and the ``sessionq stats`` of such a dir — the
owned partitions' stores summed as ``sessions``/``events``/..., standby copies apart.

A store of a partition the node neither owns nor copies now (kept for a possible
return) is listed under ``kept`` and counted nowhere else.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import orjson

from indexer.lineage.table import LineageTable, lineage_path
from indexer.sources.partitions.replica import PARTITIONS_DIR
from indexer.stats import store_stats
from indexer.store.private import write_file

STATUS_FILE = "node.json"
SUMMED = ("sessions", "live_sessions", "events", "documents", "sqlite_bytes", "index_bytes")


def write_status(
    node_dir: Path, *, partitions: int, owned: list[int], ready: list[int], standby: list[int]
) -> None:
    status = {
        "partitions": partitions,
        "owned": owned,
        "ready": ready,
        "standby": standby,
        "updated_at": time.time(),
    }
    path = node_dir / STATUS_FILE
    temp = path.with_suffix(".tmp")
    write_file(temp, orjson.dumps(status))
    temp.replace(path)


def read_status(node_dir: Path) -> dict[str, Any] | None:
    """The node's last ``node.json`` (None: not a node's data dir)."""
    try:
        raw: Any = orjson.loads((node_dir / STATUS_FILE).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    return raw if isinstance(raw, dict) else None


def is_node_dir(path: Path) -> bool:
    return (path / STATUS_FILE).exists() or lineage_path(path).exists()


def node_stats(node_dir: Path) -> dict[str, Any]:
    """``sessionq stats`` of a node's data dir (module docstring)."""
    status = read_status(node_dir) or {}
    owned = sorted(int(p) for p in status.get("owned", []))
    standby = sorted(int(p) for p in status.get("standby", []))
    root = node_dir / PARTITIONS_DIR
    present = (
        sorted(int(c.name) for c in root.iterdir() if c.name.isdigit()) if root.is_dir() else []
    )
    out: dict[str, Any] = {
        "node": True,
        "partitions": status.get("partitions", 0),
        "owned": owned,
        "ready": sorted(int(p) for p in status.get("ready", [])),
        **dict.fromkeys(SUMMED, 0),
        "standby": {"partitions": standby, **dict.fromkeys(SUMMED, 0)},
        "kept": [p for p in present if p not in owned and p not in standby],
        "per_partition": {},
    }
    for p in present:
        if p not in owned and p not in standby:
            continue
        stats = store_stats(root / str(p)).to_json()
        role = "active" if p in owned else "standby"
        out["per_partition"][str(p)] = {"role": role, **{k: stats[k] for k in SUMMED}}
        into = out if role == "active" else out["standby"]
        for key in SUMMED:
            into[key] += stats[key]
    if lineage_path(node_dir).exists():
        table = LineageTable(node_dir, writable=False)
        try:
            out["lineage_sessions"] = table.count()
        finally:
            table.close()
    return out
