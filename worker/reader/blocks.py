"""A page of a session's events as transcript blocks (what the console shows).

One pass over the events in seq order:

* ``user/message``: a ``user`` block (``context`` when a plugin, not the person, wrote it).
* ``assistant/message``: its content in order: ``thinking`` for reasoning, ``assistant``
  for text (with the model and the token usage), a ``tool`` block per tool call.
* ``tool/call`` events name a call the message already opened (or open it when the
  message has none); ``tool/result`` completes the call of its ``callId`` — paired, so
  input and output are one block. A result whose call is on an earlier page stands
  alone (the page attaches it by ``call_id``).
* ``assistant/chunk``: stream deltas, merged by block; dropped when their message
  follows, else one ``partial`` block (an interrupted stream) whose text is redacted
  whole (``shown_text``: a secret split across deltas is whole there). A run the page
  holds only part of (it began before the page: ``head_open``; it goes on after it:
  ``tail_open``) shows no text, only how many deltas it holds: its text redacted in
  part could show part of a secret.
* A tool call's arguments are shown indented, which decodes their escapes
  (``\\u0067hp_``): the text shown is redacted again (``shown_text``), and arguments
  whose indented form would be far larger than they are are shown as written.
* ``turn/end`` that did not complete: a ``note``. Anything else (steps, headers, titles,
  plugin events) is summed up in ``meta`` blocks: one per run, with the types it holds.

Every block carries the ``seq`` and ``time`` of the event it came from. Text is bounded
per block (``MAX_TEXT``); the page is bounded by the range read.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final

import orjson

from indexer.model import SessionEvent
from indexer.model.event import load_json

__all__ = ["MAX_TEXT", "Block", "transcript_blocks"]

Block = dict[str, Any]
MAX_TEXT: Final = 100_000
_DELTAS: Final = {"text-delta": "text", "reasoning-delta": "thinking"}
_INDENT_GROWTH: Final = 4
_CHUNK: Final = "assistant/chunk"


def _dict(value: Any) -> dict[str, Any]:
    """``value`` when it is an object, else an empty one (a log's shapes are not trusted)."""
    return value if isinstance(value, dict) else {}


def bounded(text: str) -> str:
    """``text`` cut to ``MAX_TEXT`` characters, saying how much was left out."""
    if len(text) <= MAX_TEXT:
        return text
    return f"{text[:MAX_TEXT]}\n… {len(text) - MAX_TEXT:,} more characters (read the event)"


def content_text(blocks: Any) -> str:
    """The text blocks of a content array joined; other blocks named in brackets."""
    if not isinstance(blocks, list):
        return ""
    parts: list[str] = []
    for block in blocks:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            parts.append(block["text"])
        elif kind == "tool-result":
            parts.append(content_text(block.get("content")))
        elif kind not in ("reasoning", "tool-call") and isinstance(kind, str):
            parts.append(f"[{kind}]")
    return "\n\n".join(p for p in parts if p)


def pretty_arguments(arguments: Any) -> str:
    """A tool call's arguments (the raw JSON text the model wrote) indented when it is
    JSON and indenting it costs at most ``_INDENT_GROWTH`` times its size, else as
    written (compact JSON for a value)."""
    written = arguments if isinstance(arguments, str) else None
    try:
        value = load_json(arguments) if written is not None else arguments
        if written is None:
            written = orjson.dumps(value).decode()
        pretty = orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()
    except (orjson.JSONDecodeError, TypeError):  # not JSON, or beyond orjson: as written
        return written if written is not None else str(arguments)
    return pretty if len(pretty) <= _INDENT_GROWTH * len(written) + 256 else written


class _Page:
    """The blocks of one page as they are built (``transcript_blocks``)."""

    def __init__(self, shown_text: Callable[[str], str], open_from: int | None) -> None:
        """``open_from``: the seq of the page's first event when a stream runs into the
        page from before it."""
        self.blocks: list[Block] = []
        self.calls: dict[str, Block] = {}
        self.chunks: list[tuple[SessionEvent, str, str]] = []  # (event, kind, delta)
        self.shown_text = shown_text
        self.open_from = open_from

    def add(self, block: Block) -> None:
        if block["kind"] != "meta":
            self.flush_chunks()
        self.blocks.append(block)

    def meta(self, event: SessionEvent) -> None:
        last = self.blocks[-1] if self.blocks else None
        if last is not None and last["kind"] == "meta" and last["last"] == event.seq - 1:
            last["last"] = event.seq
            last["count"] += 1
            if event.type not in last["types"]:
                last["types"].append(event.type)
            return
        self.blocks.append(
            {
                "kind": "meta",
                "seq": event.seq,
                "time": event.time,
                "last": event.seq,
                "count": 1,
                "types": [event.type],
            }
        )

    def flush_chunks(self, tail_open: bool = False) -> None:
        """Deltas with no message after them: one ``partial`` block per kind, or one
        block saying how many deltas a run the page holds only part of has."""
        if not self.chunks:
            return
        first = self.chunks[0][0]
        if tail_open or first.seq == self.open_from:
            self.blocks.append(
                {
                    "kind": "partial",
                    "seq": first.seq,
                    "time": first.time,
                    "text": None,
                    "deltas": len(self.chunks),
                    "interrupted": True,
                }
            )
            self.chunks.clear()
            return
        for kind in ("thinking", "text"):
            text = "".join(delta for _, k, delta in self.chunks if k == kind)
            if text:
                shown = bounded(self.shown_text(text))
                self.blocks.append(
                    {
                        "kind": "partial" if kind == "text" else "thinking",
                        "seq": first.seq,
                        "time": first.time,
                        "text": shown,
                        "interrupted": True,
                    }
                )
        self.chunks.clear()

    def tool(self, event: SessionEvent, call_id: Any, name: Any, arguments: Any) -> None:
        key = call_id if isinstance(call_id, str) else None
        if key is not None and key in self.calls:
            self.calls[key]["call_seq"] = event.seq
            return
        block: Block = {
            "kind": "tool",
            "seq": event.seq,
            "time": event.time,
            "call_id": key,
            "name": name if isinstance(name, str) else "tool",
            "input": bounded(self.shown_text(pretty_arguments(arguments))),
            "result": None,
        }
        if key is not None:
            self.calls[key] = block
        self.add(block)


def _assistant(page: _Page, event: SessionEvent, data: dict[str, Any]) -> None:
    page.chunks.clear()  # the message holds what its deltas streamed
    message = _dict(data.get("message"))
    model = _dict(message.get("source")).get("model")
    usage = data.get("usage") if isinstance(data.get("usage"), dict) else None
    content = message.get("content")
    before = len(page.blocks)
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "reasoning" and isinstance(block.get("text"), str) and block["text"]:
            page.add(
                {
                    "kind": "thinking",
                    "seq": event.seq,
                    "time": event.time,
                    "text": bounded(block["text"]),
                }
            )
        elif kind == "text" and isinstance(block.get("text"), str) and block["text"].strip():
            page.add(
                {
                    "kind": "assistant",
                    "seq": event.seq,
                    "time": event.time,
                    "text": bounded(block["text"]),
                    "model": model,
                }
            )
        elif kind == "tool-call":
            page.tool(event, block.get("id"), block.get("name"), block.get("arguments"))
    if len(page.blocks) == before:  # nothing to read (no text, no call): summed up
        page.meta(event)
        return
    if data.get("interrupted") is True or usage:
        last = next((b for b in reversed(page.blocks) if b["seq"] == event.seq), None)
        if last is not None:
            if usage:
                last["usage"] = {k: usage[k] for k in ("inputTokens", "outputTokens") if k in usage}
            if data.get("interrupted") is True:
                last["interrupted"] = True


def _result(page: _Page, event: SessionEvent, data: dict[str, Any]) -> None:
    message = _dict(data.get("message"))
    call_id = _dict(message.get("source")).get("callId")
    content = message.get("content")
    first = _dict(content[0]) if isinstance(content, list) and content else {}
    error = data.get("error") if isinstance(data.get("error"), dict) else None
    result = {
        "seq": event.seq,
        "time": event.time,
        "text": bounded(content_text(content)),
        "is_error": first.get("isError") is True or error is not None,
        "error": f"{error.get('name', '')} {error.get('code', '')}".strip() if error else None,
    }
    call = page.calls.get(call_id) if isinstance(call_id, str) else None
    if call is not None and call["result"] is None:
        call["result"] = result
        return
    page.add(
        {
            "kind": "tool",
            "seq": event.seq,
            "time": event.time,
            "call_id": call_id,
            "name": None,
            "input": None,
            "result": result,
        }
    )


def _user(page: _Page, event: SessionEvent, data: dict[str, Any]) -> None:
    source = _dict(data.get("source"))
    kind = source.get("kind")
    text = content_text(data.get("content"))
    if not text.strip():
        page.meta(event)
        return
    block: Block = {"kind": "user", "seq": event.seq, "time": event.time, "text": bounded(text)}
    if kind not in (None, "user"):
        block["kind"] = "context"
        block["source"] = str(source.get("plugin") or kind)
    page.add(block)


def _turn_end(page: _Page, event: SessionEvent, data: dict[str, Any]) -> None:
    reason = _dict(data.get("reason"))
    kind = reason.get("kind")
    if kind in (None, "completed"):
        page.meta(event)
        return
    kind = kind if isinstance(kind, str) else "unknown"
    error = _dict(reason.get("error"))
    why = error.get("message") if isinstance(error.get("message"), str) else None
    text = f"Turn ended: {kind}" + (f" — {why}" if why else "")
    page.add({"kind": "note", "seq": event.seq, "time": event.time, "text": bounded(text)})


def transcript_blocks(
    events: Sequence[SessionEvent],
    shown_text: Callable[[str], str],
    *,
    head_open: bool = False,
    tail_open: bool = False,
) -> list[Block]:
    """The blocks of ``events`` (module docstring)."""
    page = _Page(shown_text, events[0].seq if head_open and events else None)
    for event in events:
        data = _dict(event.data)
        etype = event.type
        if etype == "user/message":
            _user(page, event, data)
        elif etype == "assistant/message":
            _assistant(page, event, data)
        elif etype == "tool/call":
            page.tool(event, data.get("callId"), data.get("name"), data.get("arguments"))
        elif etype == "tool/result":
            _result(page, event, data)
        elif etype == _CHUNK:
            chunk = _dict(data.get("chunk"))
            kind = _DELTAS.get(str(chunk.get("type")))
            if kind is not None and isinstance(chunk.get("text"), str):
                page.chunks.append((event, kind, chunk["text"]))
            page.meta(event)
        elif etype == "turn/end":
            _turn_end(page, event, data)
        else:
            page.meta(event)
    page.flush_chunks(tail_open)
    return page.blocks
