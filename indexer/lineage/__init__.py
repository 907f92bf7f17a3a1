"""The global lineage of partitioned nodes: session id -> parent, workspace key, created
time, for every session of every partition (``entry``: the compacted topic's records;
``table``: a node's local copy; ``follower``: the copy kept up to date from the topic)."""

from indexer.lineage.entry import LineageEntry, decode_entry, encode_entry
from indexer.lineage.table import LineageTable

__all__ = ["LineageEntry", "LineageTable", "decode_entry", "encode_entry"]
