"""Importers: other agents' session logs (Claude Code, Codex CLI) read into sessionq's
event model, so search, traces, reads and authorization treat them like dsh sessions.

``detect`` finds the logs under a root and picks each file's format; ``claude_code``
and ``codex`` turn one file into one :class:`~indexer.logs.reader.SessionLog`. The
mapping is written down in ``docs/importers.md``.
"""

from indexer.logs.importers.detect import (
    FORMATS,
    LogFormat,
    LogSource,
    detect_file,
    discover_sources,
    read_source,
)

__all__ = [
    "FORMATS",
    "LogFormat",
    "LogSource",
    "detect_file",
    "discover_sources",
    "read_source",
]
