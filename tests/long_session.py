"""A valid dsh log of one long agent session, of any number of events (tests, benchmarks).

The session repeats a turn the way dsh writes one: ``turn/start``, ``step/start``, a user
message, ``request/context``, the streamed reply (``assistant/chunk`` block markers around
a packed ``text-chunks`` row, usage, finish), the assistant message, a tool call and its
result, ``step/end``, ``turn/end``. Every 40th turn a compaction replaces the surface so
far with one summary message (``surfaceOp`` replace citing every shadowed node), every
25th turn rewrites the previous turn's tool result (a ``tool/result`` replace, SPEC §2.1
rule 5), and every 100th turn retitles the session. Events are small (about 100-300
bytes of JSON); their words are drawn from a fixed vocabulary, so the index sees real
terms. Deterministic for a given ``seed``.

``write_long_session(path, n)`` writes plain ``.jsonl``, or concatenated zstd frames
(``zstd=True``): the header frame, then one frame per turn, as dsh appends them.
``python -m tests.long_session OUT N [--zstd]`` writes one from the command line.
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import orjson
import zstandard

from tests.builders import BASE_TIME

SESSION_ID: Final = "0a11ce55-1000-4000-8000-00000000c0de"
_WORDS: Final = (
    "index",
    "segment",
    "commit",
    "writer",
    "reader",
    "block",
    "frame",
    "offset",
    "partition",
    "replica",
    "session",
    "event",
    "surface",
    "shadow",
    "compaction",
    "summary",
    "tool",
    "result",
    "call",
    "delta",
    "parse",
    "stream",
    "batch",
    "record",
    "header",
    "cursor",
    "search",
    "phrase",
    "token",
    "query",
    "budget",
    "deadline",
    "cancel",
    "worker",
    "kafka",
    "tantivy",
    "sqlite",
    "zstd",
    "chunk",
    "packed",
    "memory",
    "bounded",
    "检索",
    "会话",
    "事件",
    "索引",
    "压缩",
    "内存",
)
_COMPACT_EVERY: Final = 40
_REWRITE_EVERY: Final = 25
_TITLE_EVERY: Final = 100


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(words))


class _Session:
    """The running state of the generated session: next seq, time, surface."""

    def __init__(self, n_events: int, seed: int) -> None:
        self.left = n_events
        self.rng = random.Random(seed)
        self.seq = 0
        self.time = BASE_TIME
        self.surface: list[int] = []  # the current surface nodes, fold order
        self.last_result: tuple[int, dict[str, Any]] | None = None  # (seq, data)

    def event(self, typ: str, data: Any, **extra: Any) -> dict[str, Any]:
        self.time += self.rng.randint(0, 40)
        ev: dict[str, Any] = {"type": typ, "seq": self.seq, "time": self.time, "data": data}
        ev.update(extra)
        self.seq += 1
        self.left -= 1
        return ev

    def node(self, typ: str, data: Any, sources: list[int] | None = None) -> dict[str, Any]:
        extra: dict[str, Any] = {} if sources is None else {"sourceEventSeqs": sources}
        ev = self.event(typ, data, **extra, surfaceOp="append")
        self.surface.append(ev["seq"])
        return ev

    def replace(self, typ: str, data: Any, start: int, end: int) -> dict[str, Any]:
        i, j = self.surface.index(start), self.surface.index(end)
        shadowed = self.surface[i : j + 1]
        op = {"op": "replace", "start": start, "end": end}
        ev = self.event(typ, data, sourceEventSeqs=shadowed, surfaceOp=op)
        self.surface[i : j + 1] = [ev["seq"]]
        return ev

    def turn(self, t: int) -> Iterator[Any]:
        """One turn's lines (a chunk row stands for its members), cut short when the
        session's event count is reached."""
        rng = self.rng
        ts = {"turn": t, "step": 1}
        steps: list[Any] = [
            lambda: self.event("turn/start", {"turn": t}),
            lambda: self.event("step/start", ts),
            lambda: self.node("user/message", self._message("user", t, rng.randint(4, 14))),
            lambda: self.event("request/context", {"provider": "p", "model": "m"}),
            lambda: self._chunk(ts, {"type": "block-start", "index": 0, "blockType": "text"}),
            lambda: self._row(ts, rng.randint(8, 40)),
            lambda: self._chunk(ts, {"type": "block-end", "index": 0}),
            lambda: self._chunk(ts, {"type": "finish", "reason": {"kind": "tool-calls"}}),
            lambda: self.node("assistant/message", self._reply(ts, rng.randint(5, 20))),
            lambda: self.event(
                "tool/call", {**ts, "callId": f"c{t}", "name": "bash", "arguments": "{}"}
            ),
            lambda: self._result(ts, t),
        ]
        if t % _REWRITE_EVERY == 0 and self.last_result is not None:
            steps.append(self._rewrite)
        if t % _TITLE_EVERY == 0:
            steps.append(lambda: self.event("session/title", self._title()))
        if t % _COMPACT_EVERY == 0 and len(self.surface) > 1:
            steps.append(self._compact)
        steps += [lambda: self.event("step/end", ts), lambda: self.event("turn/end", {"turn": t})]
        for step in steps:
            if self.left <= 0:
                return
            yield step()

    def _message(self, role: str, t: int, words: int) -> dict[str, Any]:
        return {
            "content": [{"type": "text", "text": _text(self.rng, words)}],
            "source": {"kind": role},
            "role": role,
            "id": f"{role[0]}-{t}-{self.seq}",
        }

    def _reply(self, ts: dict[str, int], words: int) -> dict[str, Any]:
        message = {
            "role": "assistant",
            "content": [{"type": "text", "text": _text(self.rng, words)}],
            "source": {"kind": "model", "provider": "p", "model": "m"},
            "id": f"a-{self.seq}",
        }
        return {**ts, "message": message}

    def _chunk(self, ts: dict[str, int], chunk: dict[str, Any]) -> dict[str, Any]:
        return self.event("assistant/chunk", {**ts, "chunk": chunk})

    def _row(self, ts: dict[str, int], members: int) -> dict[str, Any]:
        members = max(1, min(members, self.left))
        texts = [" " + self.rng.choice(_WORDS) for _ in range(members)]
        dt = [self.rng.randint(0, 30) for _ in range(members - 1)]
        row = {
            "type": "text-chunks",
            "seq0": self.seq,
            "time0": self.time,
            "data": {**ts, "index": 0, "dt": dt, "texts": texts},
        }
        self.seq += members
        self.left -= members
        self.time += sum(dt)
        return row

    def _result_data(self, ts: dict[str, int], t: int, text: str) -> dict[str, Any]:
        block = {"type": "tool-result", "toolCallId": f"c{t}", "isError": False}
        block["content"] = [{"type": "text", "text": text}]
        message = {"source": {"kind": "tool", "callId": f"c{t}"}, "content": [block]}
        return {**ts, "message": {**message, "role": "user", "id": f"r-{t}"}}

    def _result(self, ts: dict[str, int], t: int) -> dict[str, Any]:
        data = self._result_data(ts, t, _text(self.rng, self.rng.randint(3, 30)))
        ev = self.node("tool/result", data, sources=[self.seq - 1])
        self.last_result = (ev["seq"], data)
        return ev

    def _rewrite(self) -> dict[str, Any]:
        """The previous result, its content replaced (a pruned tool output)."""
        assert self.last_result is not None
        seq, data = self.last_result
        message = data["message"]
        block = {**message["content"][0], "content": [{"type": "text", "text": "[pruned]"}]}
        rewritten = {**data, "message": {**message, "content": [block]}}
        ev = self.replace("tool/result", rewritten, seq, seq)
        self.last_result = None
        return ev

    def _compact(self) -> dict[str, Any]:
        summary = {
            "content": [{"type": "text", "text": "summary: " + _text(self.rng, 12)}],
            "source": {"kind": "plugin", "plugin": "compact"},
            "role": "user",
            "id": f"s-{self.seq}",
        }
        self.last_result = None
        return self.replace("user/message", summary, self.surface[0], self.surface[-1])

    def _title(self) -> dict[str, Any]:
        first = self.surface[0] if self.surface else 0
        return {"title": _text(self.rng, 4), "messageSeqs": [first], "source": {"kind": "fallback"}}


def long_session_header(session_id: str = SESSION_ID) -> dict[str, Any]:
    return {
        "type": "session",
        "version": 0,
        "id": session_id,
        "createdAt": BASE_TIME,
        "cwd": "/work/long",
    }


def long_session_turns(
    n_events: int, *, seed: int = 0, session_id: str = SESSION_ID
) -> Iterator[bytes]:
    """The log's text: the header line, then one block of lines per turn (newline-ended),
    ``n_events`` events in all (chunk-row members count one each)."""
    yield orjson.dumps(long_session_header(session_id)) + b"\n"
    session = _Session(n_events, seed)
    t = 0
    while session.left > 0:
        t += 1
        yield b"".join(orjson.dumps(line) + b"\n" for line in session.turn(t))


def write_long_session(
    path: Path, n_events: int, *, zstd: bool = False, seed: int = 0, session_id: str = SESSION_ID
) -> Path:
    """Write the log to ``path``: plain, or one zstd frame per turn after the header's."""
    compressor = zstandard.ZstdCompressor(level=3)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as f:
        for part in long_session_turns(n_events, seed=seed, session_id=session_id):
            f.write(compressor.compress(part) if zstd else part)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("events", type=int)
    parser.add_argument("--zstd", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    write_long_session(args.out, args.events, zstd=args.zstd, seed=args.seed)


if __name__ == "__main__":
    main()
