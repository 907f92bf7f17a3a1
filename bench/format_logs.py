"""One long session log of each format, written as a stream to a size in bytes.

Every writer lays its log out where its agent would (the path discovery finds is
returned) and writes it turn by turn — a prompt, an answer, a tool call and its result,
text drawn from a seeded vocabulary — until the file (for OpenCode: the files of the
session) reaches the size asked for. Nothing is held but one turn, so a 1 GiB log
costs no memory to write. The shapes are the ones ``tests/importers/agent_logs.py``
writes (and the importers' fixtures hold), so every line maps to events.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Final

__all__ = ["FORMATS", "ONE_LINERS", "write_format_log", "write_one_liners"]

SID: Final = "b3c40000-0000-4000-8000-000000000001"
CWD: Final = "/home/dev/bench"
_VOCABULARY: Final = (
    "index search query session token retry backoff config parser schema worker broker"
    " partition offset commit segment merge snapshot restore lease writer reader cache"
    " buffer stream frame header event payload result output input module function class"
    " method error failure timeout deadline cancel signal thread process memory bytes"
)
_WORDS: Final = tuple(_VOCABULARY.split())


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(words))


def _iso(i: int) -> str:
    day, hour, minute, second = 10 + i // 86400 % 18, i // 3600 % 24, i // 60 % 60, i % 60
    return f"2025-11-{day:02d}T{hour:02d}:{minute:02d}:{second:02d}.000Z"


def _turns(seed: int) -> Iterator[tuple[int, str, str, str, str]]:
    """``(i, prompt, answer, call arguments, result)`` forever."""
    rng = random.Random(seed)
    i = 0
    while True:
        yield i, _text(rng, 20), _text(rng, 120), _text(rng, 12), _text(rng, 500)
        i += 1


def _jsonl(path: Path, size: int, lines: Callable[[int, str, str, str, str], list[Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as f:
        for turn in _turns(7):
            chunk = "".join(json.dumps(obj) + "\n" for obj in lines(*turn))
            if f.tell() + len(chunk) > size:  # the file stays within the size asked for
                break
            f.write(chunk)
    return path


def _claude(root: Path, size: int) -> Path:
    def lines(i: int, prompt: str, answer: str, args: str, result: str) -> list[Any]:
        base = {"sessionId": SID, "cwd": CWD, "timestamp": _iso(i)}
        call = f"toolu_{i}"
        use = {"type": "tool_use", "id": call, "name": "Bash", "input": {"command": args}}
        return [
            {
                **base,
                "type": "user",
                "uuid": f"u{i}",
                "message": {"role": "user", "content": prompt},
            },
            {
                **base,
                "type": "assistant",
                "uuid": f"a{i}",
                "message": {
                    "id": f"m{i}",
                    "role": "assistant",
                    "model": "claude",
                    "content": [{"type": "text", "text": answer}, use],
                },
            },
            {
                **base,
                "type": "user",
                "uuid": f"r{i}",
                "message": {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": call, "content": result}],
                },
            },
        ]

    return _jsonl(root / "projects" / "-home-dev-bench" / f"{SID}.jsonl", size, lines)


def _codex(root: Path, size: int) -> Path:
    def lines(i: int, prompt: str, answer: str, args: str, result: str) -> list[Any]:
        out: list[Any] = []
        if i == 0:
            meta = {"id": SID, "timestamp": _iso(0), "cwd": CWD, "model_provider": "openai"}
            out.append({"timestamp": _iso(0), "type": "session_meta", "payload": meta})
        t = _iso(i)
        out += [
            {
                "timestamp": t,
                "type": "response_item",
                "payload": {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": prompt}],
                },
            },
            {
                "timestamp": t,
                "type": "response_item",
                "payload": {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": answer}],
                },
            },
            {
                "timestamp": t,
                "type": "response_item",
                "payload": {
                    "type": "function_call",
                    "name": "shell",
                    "arguments": json.dumps({"command": args}),
                    "call_id": f"c{i}",
                },
            },
            {
                "timestamp": t,
                "type": "response_item",
                "payload": {"type": "function_call_output", "call_id": f"c{i}", "output": result},
            },
        ]
        return out

    day = root / "sessions" / "2025" / "11" / "10"
    return _jsonl(day / f"rollout-2025-11-10T10-00-00-{SID}.jsonl", size, lines)


def _gemini_messages(i: int, prompt: str, answer: str, args: str, result: str) -> list[Any]:
    t = _iso(i)
    call = {
        "id": f"c{i}",
        "name": "run_shell_command",
        "args": {"command": args},
        "status": "success",
        "result": [{"functionResponse": {"id": f"c{i}", "response": {"output": result}}}],
    }
    return [
        {"id": f"u{i}", "timestamp": t, "type": "user", "content": prompt},
        {"id": f"g{i}", "timestamp": t, "type": "gemini", "content": answer, "toolCalls": [call]},
    ]


def _gemini_head() -> dict[str, Any]:
    return {"sessionId": SID, "projectHash": "0" * 64, "startTime": _iso(0), "kind": "main"}


def _gemini_jsonl(root: Path, size: int) -> Path:
    def lines(i: int, prompt: str, answer: str, args: str, result: str) -> list[Any]:
        head = [_gemini_head()] if i == 0 else []
        return head + _gemini_messages(i, prompt, answer, args, result)

    chats = root / "tmp" / ("0" * 64) / "chats"
    return _jsonl(chats / f"session-2025-11-10T10-00-{SID[:8]}.jsonl", size, lines)


def _gemini_json(root: Path, size: int) -> Path:
    """The older one-document chat (``JSON.stringify(chat, null, 2)``)."""
    path = root / "tmp" / ("0" * 64) / "chats" / f"session-2025-11-10T10-00-{SID[:8]}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    head = json.dumps(_gemini_head(), indent=2)[:-2]
    with path.open("w") as f:
        f.write(head + ',\n  "messages": [\n')
        first, tail = True, '\n  ],\n  "summary": "a long benchmark chat"\n}\n'
        for turn in _turns(7):
            chunk = "".join(
                ("" if first and n == 0 else ",\n") + json.dumps(message, indent=2)
                for n, message in enumerate(_gemini_messages(*turn))
            )
            if f.tell() + len(chunk) + len(tail) > size:  # within the size asked for
                break
            f.write(chunk)
            first = False
        f.write(tail)
    return path


def _copilot(root: Path, size: int) -> Path:
    def lines(i: int, prompt: str, answer: str, args: str, result: str) -> list[Any]:
        t = _iso(i)

        def event(kind: str, data: dict[str, Any], n: int) -> dict[str, Any]:
            return {"type": kind, "data": data, "id": f"e{i}-{n}", "timestamp": t, "parentId": None}

        out = []
        if i == 0:
            start = {"sessionId": SID, "startTime": t, "context": {"cwd": CWD}}
            out.append(event("session.start", start, 0))
        request = {"toolCallId": f"c{i}", "name": "bash", "arguments": {"command": args}}
        done = {"toolCallId": f"c{i}", "success": True, "result": {"content": result}}
        return [
            *out,
            event("user.message", {"content": prompt}, 1),
            event("assistant.message", {"content": answer, "toolRequests": [request]}, 2),
            event("tool.execution_complete", done, 3),
        ]

    return _jsonl(root / "session-state" / SID / "events.jsonl", size, lines)


def _opencode(root: Path, size: int) -> Path:
    storage = root / "storage"
    sid = f"ses_{SID.replace('-', '')}"
    session = storage / "session" / "p1" / f"{sid}.json"
    session.parent.mkdir(parents=True, exist_ok=True)
    meta = {"id": sid, "projectID": "p1", "directory": CWD, "title": "t", "time": {"created": 1}}
    session.write_text(json.dumps(meta, indent=2))
    written = 0

    def doc(path: Path, obj: dict[str, Any]) -> None:
        nonlocal written
        path.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps(obj, indent=2)
        path.write_text(text)
        written += len(text)

    for i, prompt, answer, args, result in _turns(7):
        for n, role in enumerate(("user", "assistant")):
            mid = f"msg_{i:08d}{n}"
            message = {
                "id": mid,
                "sessionID": sid,
                "role": role,
                "time": {"created": 1000 + 2 * i + n},
            }
            doc(storage / "message" / sid / f"{mid}.json", message)
            if role == "user":
                doc(
                    storage / "part" / mid / f"prt_{mid}a.json",
                    {"id": f"prt_{mid}a", "messageID": mid, "type": "text", "text": prompt},
                )
                continue
            doc(
                storage / "part" / mid / f"prt_{mid}a.json",
                {"id": f"prt_{mid}a", "messageID": mid, "type": "text", "text": answer},
            )
            state = {"status": "completed", "input": {"command": args}, "output": result * 8}
            tool = {
                "id": f"prt_{mid}b",
                "messageID": mid,
                "type": "tool",
                "callID": f"c{i}",
                "tool": "bash",
                "state": state,
            }
            doc(storage / "part" / mid / f"prt_{mid}b.json", tool)
        if written >= size:
            break
    return session


def _dsh(root: Path, size: int) -> Path:
    """A dsh log of whole turns: prompt, answer (a model message), tool result."""

    def lines(i: int, prompt: str, answer: str, args: str, result: str) -> list[Any]:
        out: list[Any] = []
        if i == 0:
            out.append({"type": "session", "version": 0, "id": SID, "createdAt": 1, "cwd": CWD})
        seq, t = 3 * i, 1000 + i

        def message(
            role: str, content: list[Any], source: dict[str, Any], n: int
        ) -> dict[str, Any]:
            return {"role": role, "content": content, "id": f"{role}-{i}-{n}", "source": source}

        user = message("user", [{"type": "text", "text": prompt}], {"kind": "user"}, 0)
        model = {"kind": "model", "provider": "p", "model": "m"}
        call = {
            "type": "tool-call",
            "id": f"c{i}",
            "name": "bash",
            "arguments": json.dumps({"command": args}),
        }
        assistant = message("assistant", [{"type": "text", "text": answer}, call], model, 1)
        block = {
            "type": "tool-result",
            "toolCallId": f"c{i}",
            "content": [{"type": "text", "text": result}],
            "isError": False,
        }
        tool = message("user", [block], {"kind": "tool", "callId": f"c{i}"}, 2)
        for n, (kind, data) in enumerate(
            (
                ("user/message", user),
                ("assistant/message", {"message": assistant}),
                ("tool/result", {"message": tool}),
            )
        ):
            out.append(
                {"type": kind, "seq": seq + n, "time": t, "data": data, "surfaceOp": "append"}
            )
        return out

    return _jsonl(root / "session.jsonl", size, lines)


FORMATS: Final[dict[str, Callable[[Path, int], Path]]] = {
    "dsh": _dsh,
    "claude-code": _claude,
    "codex": _codex,
    "gemini-json": _gemini_json,
    "gemini-jsonl": _gemini_jsonl,
    "copilot": _copilot,
    "opencode": _opencode,
}
ONE_LINERS: Final = "dsh-300k-one-line-messages"


def write_format_log(fmt: str, root: Path, size: int) -> Path:
    """Write ``fmt``'s log of about ``size`` bytes under ``root``; the path to ingest."""
    path = FORMATS[fmt](root, size)
    return root if fmt == "opencode" else path


def write_one_liners(path: Path, messages: int = 300_000) -> Path:
    """The dsh session of ``messages`` one-line user messages (each its own document)."""
    with path.open("w") as f:
        f.write(
            json.dumps({"type": "session", "version": 0, "id": SID, "createdAt": 1, "cwd": CWD})
            + "\n"
        )
        for i in range(messages):
            data = {
                "content": [{"type": "text", "text": f"message {i} about widget {i % 977}"}],
                "source": {"kind": "user"},
            }
            event = {
                "type": "user/message",
                "seq": i,
                "time": 1000 + i,
                "data": data,
                "surfaceOp": "append",
            }
            f.write(json.dumps(event, separators=(",", ":")) + "\n")
    return path
