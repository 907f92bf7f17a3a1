"""Session logs of each imported agent's format written from a list of turns: the
property test generates turns, the import benchmark turns the dsh corpus into them.

A turn is ``(kind, text)``: ``user`` (a prompt), ``assistant`` (an answer),
``thinking``, ``call`` (a tool call whose argument is the text), ``result`` (the result
of the latest call). Each writer lays the log out where its agent would and returns
the path discovery finds.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

__all__ = ["KINDS", "SID", "WRITERS", "Turn", "aider_writes"]

SID: Final = "7e57a000-0000-4000-8000-000000000001"
Turn = tuple[str, str]  # (kind, text): user, assistant, thinking, call, result
KINDS: Final = ("user", "assistant", "thinking", "call", "result")
CWD: Final = "/home/dev/prop"


def _iso(i: int) -> str:
    return f"2025-11-10T{10 + i // 3600:02d}:{i // 60 % 60:02d}:{i % 60:02d}.000Z"


def _jsonl(path: Path, records: list[Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _claude(root: Path, turns: list[Turn], sid: str = SID) -> Path:
    out: list[dict[str, Any]] = []
    call = "toolu_0"
    for i, (kind, text) in enumerate(turns):
        base = {"sessionId": sid, "cwd": CWD, "uuid": f"u{i}", "timestamp": _iso(i)}
        if kind == "user":
            out.append({**base, "type": "user", "message": {"role": "user", "content": text}})
        elif kind == "result":
            block = {"type": "tool_result", "tool_use_id": call, "content": text}
            out.append({**base, "type": "user", "message": {"role": "user", "content": [block]}})
        else:
            call = f"toolu_{i}"
            content = {
                "assistant": {"type": "text", "text": text},
                "thinking": {"type": "thinking", "thinking": text},
                "call": {"type": "tool_use", "id": call, "name": "Bash", "input": {"c": text}},
            }[kind]
            message = {"id": f"m{i}", "role": "assistant", "model": "m", "content": [content]}
            out.append({**base, "type": "assistant", "message": message})
    return _jsonl(root / "-home-dev-prop" / f"{sid}.jsonl", out)


def _codex(root: Path, turns: list[Turn], sid: str = SID) -> Path:
    meta = {"id": sid, "timestamp": _iso(0), "cwd": CWD, "model_provider": "openai"}
    out: list[dict[str, Any]] = [{"timestamp": _iso(0), "type": "session_meta", "payload": meta}]
    call = "call_0"
    for i, (kind, text) in enumerate(turns):
        payload: dict[str, Any]
        if kind in ("user", "assistant"):
            item = "input_text" if kind == "user" else "output_text"
            payload = {"type": "message", "role": kind, "content": [{"type": item, "text": text}]}
        elif kind == "thinking":
            payload = {"type": "reasoning", "summary": [{"type": "summary_text", "text": text}]}
        elif kind == "call":
            call = f"call_{i}"
            args = json.dumps({"c": text})
            payload = {"type": "function_call", "name": "shell", "arguments": args, "call_id": call}
        else:
            payload = {"type": "function_call_output", "call_id": call, "output": text}
        out.append({"timestamp": _iso(i), "type": "response_item", "payload": payload})
        if kind == "user" and i % 2:  # the event_msg copy of the prompt, as Codex writes it
            copy = {"type": "user_message", "message": text}
            out.append({"timestamp": _iso(i), "type": "event_msg", "payload": copy})
    return _jsonl(root / "2025" / "11" / "10" / f"rollout-2025-11-10T10-00-00-{sid}.jsonl", out)


def _gemini(root: Path, turns: list[Turn], sid: str = SID) -> Path:
    out: list[dict[str, Any]] = [{"sessionId": sid, "projectHash": "0" * 64, "startTime": _iso(0)}]
    last_call: dict[str, Any] | None = None
    for i, (kind, text) in enumerate(turns):
        base = {"id": f"m{i}", "timestamp": _iso(i)}
        if kind == "user":
            out.append({**base, "type": "user", "content": text})
        elif kind == "assistant":
            out.append({**base, "type": "gemini", "content": text, "model": "g"})
        elif kind == "thinking":
            thought = {"subject": "s", "description": text, "timestamp": _iso(i)}
            out.append({**base, "type": "gemini", "content": "", "thoughts": [thought]})
        elif kind == "call":
            tool = {"id": f"c{i}", "name": "shell", "args": {"c": text}, "status": "executing"}
            last_call = {**base, "type": "gemini", "content": "", "toolCalls": [tool]}
            out.append(last_call)
        else:
            if last_call is None:
                tool = {"id": f"c{i}", "name": "shell", "args": {}, "status": "executing"}
                last_call = {**base, "type": "gemini", "content": "", "toolCalls": [tool]}
            done: dict[str, Any] = dict(last_call["toolCalls"][0])
            done["result"] = [
                {"functionResponse": {"id": done["id"], "response": {"output": text}}}
            ]
            last_call = {**last_call, "toolCalls": [done]}
            out.append(last_call)  # Gemini appends the whole message again with its result
            last_call = None
    return _jsonl(
        root / "tmp" / ("0" * 64) / "chats" / f"session-2025-11-10T10-00-{sid[:8]}.jsonl", out
    )


def _copilot(root: Path, turns: list[Turn], sid: str = SID) -> Path:
    start = {"sessionId": sid, "startTime": _iso(0), "context": {"cwd": CWD}}
    out: list[dict[str, Any]] = [
        {"type": "session.start", "data": start, "id": "e", "timestamp": _iso(0), "parentId": None}
    ]
    call = "call_0"
    for i, (kind, text) in enumerate(turns):
        data: dict[str, Any]
        if kind == "user":
            typ, data = "user.message", {"content": text}
        elif kind == "result":
            typ, data = (
                "tool.execution_complete",
                {"toolCallId": call, "success": True, "result": {"content": text}},
            )
        else:
            typ, data = "assistant.message", {"messageId": f"m{i}", "content": ""}
            if kind == "assistant":
                data["content"] = text
            elif kind == "thinking":
                data["reasoningText"] = text
            else:
                call = f"call_{i}"
                data["toolRequests"] = [
                    {"toolCallId": call, "name": "bash", "arguments": {"c": text}}
                ]
        out.append(
            {"type": typ, "data": data, "id": f"e{i}", "timestamp": _iso(i), "parentId": None}
        )
    return _jsonl(root / "session-state" / sid / "events.jsonl", out)


def _opencode(root: Path, turns: list[Turn], sid: str = SID) -> Path:
    storage = root / "storage"
    sid = f"ses_{sid}"

    def doc(path: Path, obj: dict[str, Any]) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(obj, indent=2))

    session = storage / "session" / "p1" / f"{sid}.json"
    doc(
        session,
        {"id": sid, "projectID": "p1", "directory": CWD, "title": "t", "time": {"created": 1}},
    )
    tool: dict[str, Any] | None = None
    for i, (kind, text) in enumerate(turns):
        mid, role = (
            f"msg_{sid[4:].replace('-', '')}{i:06d}",
            "user" if kind == "user" else "assistant",
        )
        doc(
            storage / "message" / sid / f"{mid}.json",
            {"id": mid, "sessionID": sid, "role": role, "time": {"created": 1000 + i}},
        )
        part: dict[str, Any] = {"id": f"prt_{mid[4:]}", "messageID": mid}
        if kind in ("user", "assistant"):
            part.update(type="text", text=text)
        elif kind == "thinking":
            part.update(type="reasoning", text=text)
        elif kind == "call":
            part.update(
                type="tool",
                callID=f"c{i}",
                tool="bash",
                state={"status": "running", "input": {"c": text}},
            )
        else:  # a result completes a tool part of its own message
            part.update(
                type="tool",
                callID=f"c{i}",
                tool="bash",
                state={"status": "completed", "input": {}, "output": text},
            )
        tool = part
        doc(storage / "part" / mid / f"{part['id']}.json", part)
    del tool
    return session


THINKING_TAG: Final = "thinking-content-7bbeb8e1441453ad999a0bbba8a46d4b"


def aider_writes(turns: list[Turn], started: str = "2025-11-10 10:00:00") -> list[str]:
    """The writes Aider makes to its history playing ``turns`` (the shapes of
    ``aider/io.py``: a start line, ``> `` output lines, ``#### `` input lines, replies
    between blank lines), one string per write. A reply follows a user input (one is
    written before a reply that follows none) and a token report; a call is a
    ``/run`` command, its result the output that follows it (a ``/run`` is written
    before a result that follows no call). The user leaves with ``/exit``."""
    writes = [f"\n# aider chat started at {started}\n\n", "> aider --model m  \n"]
    writes.append("> Model: openai/m with diff edit format  \n")
    asked = ran = False

    def user(text: str) -> None:
        writes.append("\n#### " + "  \n#### ".join(text.splitlines() or [""]) + "  \n")

    for kind, text in turns:
        if kind in ("assistant", "thinking"):
            if not asked:
                user("go on")
            tag = THINKING_TAG
            body = text if kind == "assistant" else f"<{tag}>\n\n{text}\n\n</{tag}>"
            writes += [f"\n{body.strip()}\n\n", "> Tokens: 1.0k sent, 20 received.  \n"]
        elif kind == "result":
            if not ran:
                user("/run echo")
            writes += [f"> {line}  \n" for line in text.splitlines() or [""]]
        else:
            user(text if kind == "user" else f"/run {text}")
        asked = asked or kind in ("user", "call", "result")
        ran = kind == "call"
    user("/exit")
    return writes


def _aider(root: Path, turns: list[Turn], sid: str = SID) -> Path:
    """A repository (named by ``sid``: Aider's sessions are named by their file) whose
    history holds one session."""
    path = root / sid / ".aider.chat.history.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(aider_writes(turns)))
    return path


WRITERS: Final[dict[str, Callable[[Path, list[Turn], str], Path]]] = {
    "claude-code": _claude,
    "codex": _codex,
    "gemini": _gemini,
    "copilot": _copilot,
    "opencode": _opencode,
    "aider": _aider,
}
