"""Aider's chat history (``.aider.chat.history.md``): one session of it
(``aider_file``: the file and its sessions; ``aider_blocks``: a session's lines as
the messages Aider wrote).

Mapped, in file order (``docs/importers.md`` has the table):

* the start line → log-only ``aider/start``; it gives the header: the session id
  (``section_session_id``), ``createdAt`` (the start time, a local time without zone,
  read as UTC), ``cwd`` (the directory holding the file: Aider writes its history in
  the directory it ran in, a repository's root);
* a user block → ``user/message`` (its lines without the ``#### `` marker and the hard
  break). A command (``/add``, ``!ls``) is no prompt a title is made of; a mode command
  (``/ask``, ``/code``, ``/architect``, ``/context``, ``/help``) is, its argument being
  the prompt, and the copy of that argument Aider logs next as the model is asked is
  log-only ``aider/repeat``, so each prompt is searchable once;
* an output block right after a command that runs something (``/run``, ``/test``,
  ``/lint``, ``/git``, ``!``), or one reporting Aider's own lint run (``## Running:``)
  → ``tool/result`` of that command (its text without the ``> `` markers); every other
  output block → log-only ``aider/output``, verbatim (token reports, confirmations,
  warnings). A ``Model:`` / ``Main model:`` line names the model of the replies after it;
* a reply → ``assistant/message`` (provider ``aider``): the text, with what the model
  wrote between reasoning tags (``<thinking-content-…>``, ``<think>``; or before a lone
  ``</think>``) as ``reasoning`` blocks, not searchable.

Aider records no time but the start's: every event has that time.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from typing import Any, Final

from indexer.logs.importers.aider_blocks import Block, Blocks
from indexer.logs.importers.aider_file import START, Section, read_lines, section_session_id
from indexer.logs.importers.builder import EventBuilder
from indexer.logs.importers.common import (
    AIDER,
    assistant_message,
    iso_ms,
    text_block,
    tool_result_message,
    user_message,
)
from indexer.model.header import SessionHeader

__all__ = ["MODE_COMMANDS", "RUN_COMMANDS", "AiderImporter"]

_PROVIDER: Final = "aider"
_COMMAND: Final = re.compile(r"/([A-Za-z][\w-]*)(?:\s+(.*))?", re.DOTALL)
MODE_COMMANDS: Final = frozenset({"ask", "code", "architect", "context", "help"})
RUN_COMMANDS: Final = frozenset({"run", "test", "lint", "git"})
_MODEL: Final = re.compile(r"(?:Main model|Models?): (\S+)")
_LINT: Final = "## Running: "
_THINK_OPEN: Final = re.compile(r"<(thinking-content-[0-9a-f]+|think)>")
_THINK_CLOSE: Final = re.compile(r"</(thinking-content-[0-9a-f]+|think)>")


def _unbroken(text: str) -> str:
    """A line without the Markdown hard break Aider ends it with."""
    return text[:-2] if text.endswith("  ") else text


def _user_text(lines: list[str]) -> str:
    """A user block's text: its lines without the ``####`` marker and the hard break."""
    return "\n".join(_unbroken(line[5:] if line[4:5] == " " else line[4:]) for line in lines)


def _output_text(lines: list[str]) -> str:
    """An output block's text: its lines without the ``>`` marker and the hard break
    (a message's next lines carry none in older versions)."""
    return "\n".join(
        _unbroken(line[2:] if line.startswith("> ") else "" if line == ">" else line)
        for line in lines
    )


def _reply_content(lines: list[str]) -> list[dict[str, Any]]:
    """A reply's lines as content blocks: text, and ``reasoning`` for what stands between
    reasoning tags (or before a lone closing tag)."""
    closes = [i for i, line in enumerate(lines) if _THINK_CLOSE.fullmatch(line.strip())]
    thinking = bool(closes) and not any(
        _THINK_OPEN.fullmatch(line.strip()) for line in lines[: closes[0]]
    )
    out: list[dict[str, Any]] = []
    part: list[str] = []

    def flush() -> None:
        text = "\n".join(part).strip("\n")
        if text.strip():
            out.append({"type": "reasoning", "text": text} if thinking else text_block(text))
        part.clear()

    for line in lines:
        tag = line.strip()
        if _THINK_OPEN.fullmatch(tag) and not thinking:
            flush()
            thinking = True
        elif _THINK_CLOSE.fullmatch(tag) and thinking:
            flush()
            thinking = False
        else:
            part.append(line)
    flush()
    return out


class AiderImporter:
    """The :class:`~indexer.logs.importers.builder.Importer` of one session of a
    history: ``section`` names it (``None``: the file's first)."""

    def __init__(self, b: EventBuilder, section: Section | None = None) -> None:
        self.b = b
        self.section = section
        self.start: tuple[int, str] | None = None  # the start line's number and time text
        self.model: str | None = None
        self.command: tuple[str, str, int] | None = None  # the last block's: name, argument, line

    # ---- reading --------------------------------------------------------------------------------
    def units(self) -> Iterator[Block]:
        """The session's blocks, its start line first (``aider_blocks``): up to the next
        start line, or to the end of the file."""
        b = self.b
        lines, start = self._located()
        yield self._at(start)
        blocks = Blocks()
        whole = False
        for no, _offset, raw in lines:
            b.consumed(len(raw) + 1)
            if raw.startswith(START):
                whole = True
                break
            b.line = no
            done = blocks.feed(no, raw.decode(errors="replace"))
            if done is not None:
                yield self._at(done)
        last = blocks.end(whole=whole)
        if last is not None:
            yield self._at(last)

    def _at(self, block: Block) -> Block:
        self.b.line = block.line
        return block

    def _located(self) -> tuple[Iterator[tuple[int, int, bytes]], Block]:
        """The file's lines after the section's start line, and that line as a block.
        The line must be where discovery saw it, with the same time: else the file was
        rewritten since, and this session of it is gone."""
        b, section = self.b, self.section
        offset, line = (section.offset, section.line - 1) if section is not None else (0, 0)
        lines = read_lines(b.path, offset, line)
        for no, _offset, raw in lines:
            b.line = no
            b.consumed(len(raw) + 1)
            if raw.startswith(START):
                text = raw[len(START) :].decode(errors="replace").strip()
                if section is not None and text != section.started:
                    break
                self.start = (no, text)
                return lines, Block("start", no, [raw.decode(errors="replace")])
            if section is not None:
                break
        if section is not None:
            raise b.reject("this session's start line is gone (the file was rewritten)")
        raise b.reject("no line '# aider chat started at <time>': not an Aider chat history", 1)

    # ---- mapping --------------------------------------------------------------------------------
    def _origin(self, block: Block) -> dict[str, Any]:
        return {"agent": AIDER, "line": block.line}

    def map(self, block: Block) -> None:
        command, self.command = self.command, None
        if block.kind == "start":
            text = block.lines[0]
            self.b.add(f"{AIDER}/start", None, {"text": text, "import": self._origin(block)})
        elif block.kind == "user":
            self._user(block, command)
        elif block.kind == "output":
            self._output(block, command)
        else:
            content = _reply_content(block.lines)
            message = assistant_message(content, None, f"line-{block.line}", _PROVIDER, self.model)
            data = {"message": message, "import": self._origin(block)}
            self.b.add("assistant/message", None, data)

    def _user(self, block: Block, before: tuple[str, str, int] | None) -> None:
        text = _user_text(block.lines)
        if before is not None and before[0] in MODE_COMMANDS and text.strip() == before[1]:
            self.b.add(f"{AIDER}/repeat", None, {"text": text, "import": self._origin(block)})
            return
        prompt: str | None = text
        match = _COMMAND.fullmatch(text.strip())
        if match is not None:
            name, argument = match.group(1), (match.group(2) or "").strip()
            self.command = (name, argument, block.line)
            prompt = argument if name in MODE_COMMANDS and argument else None
        elif text.startswith("!"):
            self.command = ("!", text[1:].strip(), block.line)
            prompt = None
        elif text.strip() in ("", "<blank>"):
            prompt = None
        data = {
            **user_message([text_block(text)], None, f"line-{block.line}"),
            "import": self._origin(block),
        }
        self.b.add("user/message", None, data, prompt=prompt)

    def _output(self, block: Block, before: tuple[str, str, int] | None) -> None:
        text = _output_text(block.lines)
        for line in text.splitlines():
            found = _MODEL.match(line)
            if found is not None:
                self.model = found.group(1)
        call: str | None = None
        if before is not None and (before[0] in RUN_COMMANDS or before[0] == "!"):
            call = f"line-{before[2]}"
        elif any(line.startswith(_LINT) for line in text.splitlines()):
            call = f"line-{block.line}"
        if call is None:
            raw = "\n".join(block.lines)
            self.b.add(f"{AIDER}/output", None, {"text": raw, "import": self._origin(block)})
            return
        message = tool_result_message(call, [text_block(text)], False, call)
        self.b.add("tool/result", None, {"message": message, "import": self._origin(block)})

    # ---- header ---------------------------------------------------------------------------------
    def settled(self) -> SessionHeader | None:
        return self.header() if self.start is not None else None

    def header(self) -> SessionHeader:
        b = self.b
        if self.start is None:
            raise b.reject("no line '# aider chat started at <time>': not an Aider chat history", 1)
        line, started = self.start
        created = iso_ms(started)
        if created is None:
            raise b.reject(f"the start line names no time: {started[:40]!r}", line)
        section = self.section or Section(0, 0, line, started, 0)
        return SessionHeader(
            id=section_session_id(b.path, section),
            createdAt=max(created, 0),
            cwd=os.path.realpath(b.path.parent),
            sourceAgent=AIDER,
        )
