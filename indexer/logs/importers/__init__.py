"""Importers: other agents' session logs (Claude Code, Codex CLI, Gemini CLI / Qwen
Code, OpenCode, Copilot CLI, Aider) read into sessionq's event model, so search, traces,
reads and authorization treat them like dsh sessions.

``detect`` finds the logs under the given paths (``trees``: each agent's layout) and
picks each file's format; one module per agent turns one log into one
:class:`~indexer.logs.reader.SessionLog`. A log is one session: a file, or one session
of a file holding many (Aider's history, ``aider_file``). The mapping is written down in
``docs/importers.md``.
"""

from indexer.logs.importers.detect import (
    FORMATS,
    Discovery,
    LogFormat,
    LogSource,
    detect_file,
    discover_report,
    discover_sources,
    file_sources,
    read_source,
)

__all__ = [
    "FORMATS",
    "Discovery",
    "LogFormat",
    "LogSource",
    "detect_file",
    "discover_report",
    "discover_sources",
    "file_sources",
    "read_source",
]
