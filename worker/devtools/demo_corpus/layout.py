"""Where a session log lives in a dsh persistence root:
``<root>/--<project key>--/<encoded session id>/session.jsonl`` (``_no-cwd`` for sessions
without a workspace)."""

from __future__ import annotations

import re
from typing import Final

NO_CWD_DIR: Final = "_no-cwd"

_SEGMENT_SAFE: Final = re.compile(r"[A-Za-z0-9._-]")


def _escape_units(char: str) -> str:
    units = char.encode("utf-16-le", errors="surrogatepass")
    return "".join(
        f"~{int.from_bytes(units[i : i + 2], 'little'):04X}" for i in range(0, len(units), 2)
    )


def encode_segment(value: str) -> str:
    """dsh's ``encodeSegment``, the inverse of ``indexer.logs.roots.decode_segment``.

    ``[A-Za-z0-9._-]`` stay literal, every other UTF-16 code unit becomes ``~XXXX``
    (upper-case hex); ``.`` and ``..`` are escaped whole so they never name a directory
    link.
    """
    if value in (".", ".."):
        return "".join(_escape_units(c) for c in value)
    return "".join(c if _SEGMENT_SAFE.fullmatch(c) else _escape_units(c) for c in value)


def project_key(cwd: str | None) -> str:
    """dsh's (lossy, human-readable) project folder name for ``cwd``.

    Separator runs (``/``, ``\\``, ``:``) become one ``-``, ``[A-Za-z0-9._-]`` stay, other
    characters are ``~XXXX`` escaped; leading dashes are dropped and the result is
    wrapped in ``--…--``. Sessions without a cwd live in ``_no-cwd``.
    """
    if cwd is None:
        return NO_CWD_DIR
    out: list[str] = []
    in_separator = False
    for char in cwd:
        if char in "/\\:":
            if not in_separator:
                out.append("-")
            in_separator = True
            continue
        in_separator = False
        out.append(char if _SEGMENT_SAFE.fullmatch(char) else _escape_units(char))
    body = "".join(out).lstrip("-") or "root"
    return f"--{body[:251]}--"


def session_path(cwd: str | None, session_id: str) -> str:
    """The log's path relative to the root, POSIX separators."""
    return f"{project_key(cwd)}/{encode_segment(session_id)}/session.jsonl"
