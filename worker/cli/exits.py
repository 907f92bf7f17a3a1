"""Exit statuses of every command, and the one-line failure of bad usage: a bad flag,
path or value is one line on stderr naming it, then exit 2 (never a traceback)."""

from __future__ import annotations

import sys
from typing import NoReturn

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_TOOL_ERROR = 3


def fail(command: str, message: str) -> NoReturn:
    print(f"sessionq {command}: {message}", file=sys.stderr)
    raise SystemExit(EXIT_USAGE)
