"""The session log formats sessionq reads (one importer module each, chosen by
``indexer.logs.importers.detect``) and the values of the ``--format`` setting: a format
forced, or ``auto`` (recognised per root and file; ``None`` in ``detect``).

Standard library only: the command line's parser lists the choices without loading the
importers.
"""

from __future__ import annotations

from typing import Final, Literal, get_args

LogFormat = Literal["dsh", "claude-code", "codex", "gemini", "opencode", "copilot", "aider"]
FORMATS: Final[tuple[LogFormat, ...]] = get_args(LogFormat)

SourceFormat = Literal["auto", LogFormat]
SOURCE_FORMATS: Final[tuple[str, ...]] = get_args(SourceFormat)
