"""The blocks of one Aider session: its lines grouped into the messages Aider wrote.

Aider writes three kinds of text to its history (``aider/io.py``), and a block is a
run of one kind:

* ``user``: the user's input, each line as ``#### <line>``, a blank line before it;
* ``output``: Aider's own output (command results, warnings, confirmations, token
  reports), each message as ``> <text>``; a message of several lines has the marker on
  its first line only (older versions) or on each;
* ``reply``: the model's reply, verbatim Markdown, a blank line before and after it.

Current versions end each user and output line with a Markdown hard break (two
spaces); older ones do not. The grammar uses that where the format is otherwise
ambiguous, deciding from what the session showed so far, so a block never depends on
the lines after it:

* a ``####`` line right after a reply line, or one without the hard break in a session
  whose first user line had it, is the reply's (a model's Markdown heading);
* a ``>`` / ``> `` line right after a reply line is the reply's (a quote, or code);
* an output message whose last line lacks the hard break goes on over the next lines
  until one has it (the text of a multi-line message); over blank lines too only in a
  session that uses hard breaks and when the message followed a user or output line
  directly (a quote that opens a model's paragraph is preceded by a blank line);
* blank lines end user and output blocks; inside a reply they are the reply's.

A block is handed out once the line after it shows it ended (:meth:`Blocks.feed`),
or when the session ends (:meth:`Blocks.end`). At the next start line every block is
whole. At the end of the file, what Aider wrote in one write is: a user block (an input
is one write) and a reply followed by its blank line (a reply and that line are one
write); an output block is held, since Aider writes each output message on its own and
the next may belong to the same block (the last output of a file's last session is
read once something follows it). So a growing file maps to the same events plus new
ones.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final, Literal

from indexer.errors import LogValidationError

__all__ = ["MAX_BLOCK_BYTES", "Block", "BlockKind", "Blocks"]

BlockKind = Literal["start", "user", "output", "reply"]
MAX_BLOCK_BYTES: Final = 16 << 20
"""The most text one block may hold (as a log line may): one message's worth."""
_BREAK: Final = "  "


@dataclass(slots=True)
class Block:
    """``lines`` of one ``kind`` from line number ``line``, as written."""

    kind: BlockKind
    line: int
    lines: list[str] = field(default_factory=list)
    size: int = 0

    def add(self, text: str) -> None:
        self.size += len(text) + 1
        if self.size > MAX_BLOCK_BYTES:
            raise LogValidationError(f"a message longer than {MAX_BLOCK_BYTES} bytes")
        self.lines.append(text)


def _user_like(text: str) -> bool:
    return text.startswith("####") and (len(text) == 4 or text[4] == " ")


def _output_like(text: str) -> bool:
    return text == ">" or text.startswith("> ")


class Blocks:
    """The grammar of one session's lines (module docstring); fed the lines after the
    start line, in order."""

    def __init__(self) -> None:
        self.block: Block | None = None
        self.prev = "start"  # the kind of the line before: start, blank, user, output, reply
        self.blanks: list[str] = []  # blank lines after a reply's last line
        self.user_breaks: bool | None = None  # the session's first user line had a hard break
        self.breaks = False  # an output line of the session had one
        self.open = False  # the output message goes on over the next line
        self.across = False  # ... and over blank lines

    def feed(self, line: int, text: str) -> Block | None:
        """Take one line; the block it shows to have ended, if any."""
        prev = self.prev
        if not text.strip():
            return self._blank(text)
        hard = text.endswith(_BREAK)
        if prev != "reply" and _user_like(text) and (not self.user_breaks or hard):
            if self.user_breaks is None:
                self.user_breaks = hard
            self.open = False
            return self._line("user", line, text)
        if prev != "reply" and _output_like(text):
            self.breaks = self.breaks or hard
            self.open, self.across = not hard, self.breaks and prev in ("user", "output")
            return self._line("output", line, text)
        if self.open and self.block is not None:  # the next line of an output message
            self.open = not hard
            self.breaks = self.breaks or hard
            self.block.add(text)
            return None
        return self._line("reply", line, text)

    def end(self, *, whole: bool) -> Block | None:
        """The last block when the session ends: ``whole`` at the next start line; at the
        end of the file a user block, or a reply followed by a blank line."""
        block, self.block = self.block, None
        if block is None or whole or block.kind == "user":
            return block
        return block if block.kind == "reply" and self.blanks else None

    def _blank(self, text: str) -> Block | None:
        block = self.block
        if block is not None and block.kind == "output" and self.open and self.across:
            block.add(text)
            return None
        self.open = False
        self.prev = "blank"
        if block is not None and block.kind == "reply":
            self.blanks.append(text)
            return None
        self.block = None
        return block

    def _line(self, kind: BlockKind, line: int, text: str) -> Block | None:
        self.prev = kind
        block = self.block
        if block is not None and block.kind == kind:
            for blank in self.blanks:
                block.add(blank)
            self.blanks.clear()
            block.add(text)
            return None
        self.blanks.clear()
        self.block = Block(kind, line)
        self.block.add(text)
        return block
