"""Writing one dsh session log: the event shapes dsh writes (turns, steps, streamed
chunks and packed chunk rows, tool calls and results, titles, todos, a compaction), with
the surface fold simulated alongside so a generator bug fails here, not in the reader."""

from __future__ import annotations

import json
import random
import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from worker.devtools.demo_corpus.model import Step, ToolUse

PROVIDER: Final = "deepseek-official"
MODEL: Final = "deepseek-v4-flash"

CJK: Final = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")
_TITLE_TOKEN: Final = re.compile(r"[A-Za-z0-9_./-]+|\s+|.")


def random_uuid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def fallback_title(text: str) -> str:
    """dsh's fallback title: the first words (Latin) or about 12 characters (CJK) of the
    first user message, never cutting a Latin word in half."""
    if CJK.search(text[:8]):
        title = ""
        for token in _TITLE_TOKEN.findall(text):
            if len(title) >= 12:
                break
            title += token
        return title.strip().rstrip("，。：；、,.:;")
    return " ".join(text.split()[:5]).rstrip(",.:;")


@dataclass(slots=True)
class Log:
    """One session log being written, with the surface fold simulated alongside."""

    header: dict[str, Any]
    rng: random.Random
    now: int
    lines: list[str] = field(default_factory=list)
    seq: int = 0
    nodes: list[int] = field(default_factory=list)
    turn: int = 0
    step: int = 0
    titled: bool = False
    compaction_seq: int | None = None

    def __post_init__(self) -> None:
        self.lines.append(dumps({"type": "session", **self.header}))

    def uid(self) -> str:
        return random_uuid(self.rng)

    def tick(self, lo: int, hi: int) -> int:
        self.now += self.rng.randint(lo, hi)
        return self.now

    def emit(
        self,
        kind: str,
        data: Any,
        *,
        surface: str | dict[str, Any] | None = None,
        sources: list[int] | None = None,
        gap: tuple[int, int] = (2, 30),
    ) -> int:
        seq = self.seq
        event: dict[str, Any] = {"type": kind, "seq": seq, "time": self.tick(*gap), "data": data}
        if sources is not None:
            event["sourceEventSeqs"] = sources
        if surface is not None:
            event["surfaceOp"] = surface
        if surface == "append":
            self.nodes.append(seq)
        elif isinstance(surface, dict):
            start, end = self.nodes.index(surface["start"]), self.nodes.index(surface["end"])
            shadowed = self.nodes[start : end + 1]
            missing = [s for s in shadowed if s not in (sources or [])]
            if missing:  # a generator bug: the log would fail the fold
                raise AssertionError(f"replace at seq {seq} does not cite {missing}")
            self.nodes[start : end + 1] = [seq]
        self.lines.append(dumps(event))
        self.seq += 1
        return seq

    # ---- structure ----
    def turn_start(self, gap: tuple[int, int] = (20_000, 600_000)) -> None:
        self.turn += 1
        self.step = 0
        self.emit("turn/start", {"turn": self.turn}, gap=gap)

    def turn_end(self) -> None:
        self.emit("turn/end", {"turn": self.turn, "reason": {"kind": "completed"}})

    def step_start(self) -> None:
        self.step += 1
        self.emit("step/start", {"turn": self.turn, "step": self.step}, gap=(5, 40))

    def step_end(self) -> None:
        self.emit("step/end", {"turn": self.turn, "step": self.step}, gap=(1, 5))

    def user(self, text: str) -> int:
        seq = self.emit(
            "user/message",
            {
                "content": [{"type": "text", "text": text}],
                "source": {"kind": "user"},
                "role": "user",
                "id": self.uid(),
            },
            surface="append",
        )
        if not self.titled:
            self.titled = True
            self.emit(
                "session/title",
                {
                    "title": fallback_title(text),
                    "messageSeqs": [seq],
                    "source": {"kind": "fallback"},
                },
                gap=(0, 2),
            )
        return seq

    def provider_title(self, title: str, seqs: list[int]) -> None:
        self.emit(
            "session/title",
            {
                "title": title,
                "messageSeqs": seqs,
                "source": {
                    "kind": "provider",
                    "provider": PROVIDER,
                    "model": {"provider": PROVIDER, "model": MODEL},
                },
            },
            gap=(400, 2500),
        )

    def request_header(self) -> None:
        self.emit(
            "request/header",
            {
                "header": {
                    "config": {"provider": PROVIDER, "model": MODEL},
                    "system": "You are dsh, a coding agent working in the user's repository.",
                    "tools": [
                        {"name": n}
                        for n in ("bash", "read", "edit", "write", "grep", "glob", "subagent")
                    ],
                },
                "reason": "initial",
            },
        )
        self.emit(
            "request/context", {"provider": PROVIDER, "model": MODEL, "contextWindow": 131072}
        )

    def todos(self, todos: Sequence[tuple[str, str]]) -> None:
        self.emit("todo/write", {"todos": [{"content": c, "status": s} for c, s in todos]})

    # ---- streaming ----
    def _split(self, text: str) -> list[str]:
        cjk = bool(CJK.search(text))
        lo, hi = (3, 9) if cjk else (6, 24)
        parts: list[str] = []
        i = 0
        while i < len(text):
            n = self.rng.randint(lo, hi)
            parts.append(text[i : i + n])
            i += n
        return parts or [text]

    def _chunk(self, chunk: dict[str, Any], gap: tuple[int, int] = (8, 70)) -> int:
        return self.emit(
            "assistant/chunk", {"turn": self.turn, "step": self.step, "chunk": chunk}, gap=gap
        )

    def _deltas(self, kind: str, index: int, text: str) -> list[int]:
        parts = self._split(text)
        delta = "text-delta" if kind == "text" else "reasoning-delta"
        if len(parts) >= 3 and self.rng.random() < 0.5:
            # dsh packs a run of deltas of one block into a single storage row.
            seq0, time0 = self.seq, self.tick(8, 70)
            dt = [self.rng.randint(8, 70) for _ in parts[1:]]
            row = {
                "type": f"{kind}-chunks",
                "seq0": seq0,
                "time0": time0,
                "data": {
                    "turn": self.turn,
                    "step": self.step,
                    "index": index,
                    "dt": dt,
                    "texts": parts,
                },
            }
            self.lines.append(dumps(row))
            self.seq += len(parts)
            self.now = time0 + sum(dt)
            return list(range(seq0, seq0 + len(parts)))
        return [self._chunk({"type": delta, "index": index, "text": p}) for p in parts]

    def assistant(self, step: Step) -> tuple[int, list[tuple[str, ToolUse]]]:
        """Stream one model response (chunks) and log its ``assistant/message``."""
        seqs: list[int] = []
        content: list[dict[str, Any]] = []
        calls: list[tuple[str, ToolUse]] = []
        blocks: list[tuple[str, str | ToolUse]] = []
        if step.think:
            blocks.append(("reasoning", step.think))
        if step.say:
            blocks.append(("text", step.say))
        for tool in step.tools:
            blocks.append(("tool-call", tool))
        first = True
        for index, (kind, payload) in enumerate(blocks):
            gap = (300, 4000) if first else (8, 70)
            first = False
            start = {"type": "block-start", "index": index, "blockType": kind}
            seqs.append(self._chunk(start, gap))
            if isinstance(payload, str):
                seqs += self._deltas(kind, index, payload)
                block: dict[str, Any] = {"type": kind, "text": payload}
            else:
                tool = payload
                call_id = f"call_{self.rng.getrandbits(96):024x}"
                args = dumps(tool.arguments)
                cut = sorted(self.rng.sample(range(1, len(args)), min(2, len(args) - 1)))
                for k, (a, b) in enumerate(zip([0, *cut], [*cut, len(args)], strict=True)):
                    delta: dict[str, Any] = {
                        "type": "tool-call-delta",
                        "index": index,
                        "id": call_id,
                    }
                    if k == 0:
                        delta["name"] = tool.name
                    delta["argumentsDelta"] = args[a:b]
                    seqs.append(self._chunk(delta))
                block = {"type": "tool-call", "id": call_id, "name": tool.name, "arguments": args}
                calls.append((call_id, tool))
            seqs.append(self._chunk({"type": "block-end", "index": index, "block": block}, (1, 3)))
            content.append(block)
        usage = {
            "inputTokens": self.rng.randint(1800, 42000),
            "outputTokens": self.rng.randint(40, 900),
        }
        seqs.append(self._chunk({"type": "usage", "usage": usage}, (1, 3)))
        finish = "tool-calls" if calls else "stop"
        seqs.append(self._chunk({"type": "finish", "reason": {"kind": finish}}, (1, 3)))
        seq = self.emit(
            "assistant/message",
            self._model_message(content, usage=usage),
            surface="append",
            sources=seqs,
            gap=(1, 5),
        )
        return seq, calls

    def _model_message(self, content: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
        """The data of an ``assistant/message`` in the current step (``extra``: usage)."""
        message = {
            "role": "assistant",
            "content": content,
            "source": {"kind": "model", "provider": PROVIDER, "model": MODEL},
            "id": self.uid(),
        }
        return {"turn": self.turn, "step": self.step, "message": message, **extra}

    def tool_call(self, call_id: str, tool: ToolUse) -> int:
        return self.emit(
            "tool/call",
            {
                "turn": self.turn,
                "step": self.step,
                "callId": call_id,
                "name": tool.name,
                "arguments": dumps(tool.arguments),
            },
            gap=(0, 2),
        )

    def tool_result(self, call_id: str, call_seq: int, tool: ToolUse, result: str) -> int:
        data: dict[str, Any] = {
            "turn": self.turn,
            "step": self.step,
            "message": {
                "source": {"kind": "tool", "callId": call_id},
                "content": [
                    {
                        "type": "tool-result",
                        "toolCallId": call_id,
                        "content": [{"type": "text", "text": result}],
                        "isError": tool.error is not None,
                    }
                ],
                "role": "user",
                "id": self.uid(),
            },
        }
        if tool.error is not None:
            data["error"] = {"name": tool.error[0], "code": tool.error[1]}
        return self.emit("tool/result", data, surface="append", sources=[call_seq], gap=(150, 6000))

    def run_step(self, step: Step) -> int:
        """One step: model response, tool calls, their results. Returns the message seq."""
        seq, calls = self.assistant(step)
        call_seqs = [self.tool_call(call_id, tool) for call_id, tool in calls]
        for (call_id, tool), call_seq in zip(calls, call_seqs, strict=True):
            self.tool_result(call_id, call_seq, tool, tool.result)
        return seq

    def run_steps(self, steps: Sequence[Step]) -> list[int]:
        """Run ``steps`` in order, each closed by ``step/end``. The first one's ``step/start``
        is already written; every later one opens its own. Returns the message seqs."""
        seqs: list[int] = []
        for i, step in enumerate(steps):
            if i:
                self.step_start()
            seqs.append(self.run_step(step))
            self.step_end()
        return seqs

    def compact(self, summary: str) -> None:
        """Replace every surface node before the current user message with a summary."""
        compaction_id = self.uid()
        start_seq = self.emit(
            "compaction/start", {"compactionId": compaction_id, "turn": self.turn}, gap=(5, 30)
        )
        shadowed = self.nodes[:-1]
        summary_seq = self.emit(
            "compaction/summary",
            {
                "compactionId": compaction_id,
                "summary": [{"type": "text", "text": summary}],
                "shadowedRange": {"start": shadowed[0], "end": shadowed[-1]},
                "shadowedSeqs": shadowed,
                "provider": PROVIDER,
                "model": MODEL,
                "usage": {"inputTokens": self.rng.randint(20000, 60000), "outputTokens": 180},
            },
            gap=(2000, 9000),
        )
        self.compaction_seq = self.emit(
            "assistant/message",
            self._model_message([{"type": "text", "text": summary}]),
            surface={"op": "replace", "start": shadowed[0], "end": shadowed[-1]},
            sources=[start_seq, summary_seq, *shadowed],
            gap=(1, 5),
        )
        self.emit("compaction/end", {"compactionId": compaction_id, "turn": self.turn})

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"
