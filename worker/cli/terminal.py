"""What the command line writes to a terminal never fails on a character.

A message may quote a log's text, and a log's text may hold a lone UTF-16 surrogate (a
JavaScript string cut mid-character), which no encoder writes; a path may hold the
``surrogateescape`` stand-ins of bytes that are no UTF-8. The ``sessionq`` error
handler writes the latter as the bytes they stand for (the path the user typed) and
every other unencodable character as U+FFFD, as a JavaScript host would print it.
"""

from __future__ import annotations

import codecs
import io
import sys
from typing import Final

__all__ = ["ERRORS", "make_total"]

ERRORS: Final = "sessionq"
_REPLACEMENT: Final = "\ufffd".encode()  # bytes: a str replacement must be ASCII


def _written(exc: UnicodeError) -> tuple[str | bytes, int]:
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    text = exc.object[exc.start : exc.end]
    if all("\udc80" <= c <= "\udcff" for c in text):  # surrogateescape: the original bytes
        return bytes(ord(c) - 0xDC00 for c in text), exc.end
    return _REPLACEMENT * len(text), exc.end


codecs.register_error(ERRORS, _written)


def make_total() -> None:
    """Have stdout and stderr use the ``sessionq`` handler (module docstring)."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors=ERRORS)
