"""The local source: watched session logs applied to a data dir shared by any number of
processes (``source``: lease, parts, readiness; ``applier``: the writer's passes;
``housekeeping``: retention and purge between passes)."""

from indexer.sources.local.source import LocalSource, SourceStatus

__all__ = ["LocalSource", "SourceStatus"]
