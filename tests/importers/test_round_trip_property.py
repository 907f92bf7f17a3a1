"""The round-trip property on generated logs of every imported format: whatever a
conversation holds (prompts, answers, thinking, tool calls and their results, in any
order), every stored event is readable through the read path, every prompt, answer,
tool-call and tool-result text is in some event's searchable text, and thinking is in
none."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from indexer.ingest import ingest_files
from indexer.logs.importers import LogSource, discover_sources
from indexer.query.service import StoreQueryService
from indexer.store.data_dir import Store
from indexer.surface.text import extract_text

Turn = tuple[str, str]  # (kind, text): user, assistant, thinking, call, result
KINDS: Final = ("user", "assistant", "thinking", "call", "result")
SID: Final = "7e57a000-0000-4000-8000-000000000001"
CWD: Final = "/home/dev/prop"


def _iso(i: int) -> str:
    return f"2025-11-10T10:{i // 60:02d}:{i % 60:02d}.000Z"


def _jsonl(path: Path, records: list[Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _claude(root: Path, turns: list[Turn]) -> Path:
    out: list[dict[str, Any]] = []
    call = "toolu_0"
    for i, (kind, text) in enumerate(turns):
        base = {"sessionId": SID, "cwd": CWD, "uuid": f"u{i}", "timestamp": _iso(i)}
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
    return _jsonl(root / "-home-dev-prop" / f"{SID}.jsonl", out)


def _codex(root: Path, turns: list[Turn]) -> Path:
    meta = {"id": SID, "timestamp": _iso(0), "cwd": CWD, "model_provider": "openai"}
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
    return _jsonl(root / "2025" / "11" / "10" / f"rollout-2025-11-10T10-00-00-{SID}.jsonl", out)


def _gemini(root: Path, turns: list[Turn]) -> Path:
    out: list[dict[str, Any]] = [{"sessionId": SID, "projectHash": "0" * 64, "startTime": _iso(0)}]
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
            tool = dict(last_call["toolCalls"][0])
            tool["result"] = [
                {"functionResponse": {"id": tool["id"], "response": {"output": text}}}
            ]
            last_call = {**last_call, "toolCalls": [tool]}
            out.append(last_call)  # Gemini appends the whole message again with its result
            last_call = None
    return _jsonl(
        root / "tmp" / ("0" * 64) / "chats" / "session-2025-11-10T10-00-7e57a000.jsonl", out
    )


def _copilot(root: Path, turns: list[Turn]) -> Path:
    start = {"sessionId": SID, "startTime": _iso(0), "context": {"cwd": CWD}}
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
    return _jsonl(root / "session-state" / SID / "events.jsonl", out)


def _opencode(root: Path, turns: list[Turn]) -> Path:
    storage = root / "storage"
    sid = "ses_7e57a0000001"

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
        mid, role = f"msg_{i:06d}", "user" if kind == "user" else "assistant"
        doc(
            storage / "message" / sid / f"{mid}.json",
            {"id": mid, "sessionID": sid, "role": role, "time": {"created": 1000 + i}},
        )
        part: dict[str, Any] = {"id": f"prt_{i:06d}", "messageID": mid}
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


WRITERS: Final[dict[str, Callable[[Path, list[Turn]], Path]]] = {
    "claude-code": _claude,
    "codex": _codex,
    "gemini": _gemini,
    "copilot": _copilot,
    "opencode": _opencode,
}
_WORD: Final = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=3, max_size=10)


@st.composite
def conversations(draw: st.DrawFn) -> tuple[str, list[Turn]]:
    fmt = draw(st.sampled_from(sorted(WRITERS)))
    kinds = draw(st.lists(st.sampled_from(KINDS), min_size=1, max_size=12))
    turns = [(kind, f"{draw(_WORD)} marker{i}x {draw(_WORD)}") for i, kind in enumerate(kinds)]
    return fmt, turns


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conversations())
def test_every_generated_log_reads_back_whole_and_searchable(case: tuple[str, list[Turn]]) -> None:
    fmt, turns = case
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "logs"
        WRITERS[fmt](root, turns)
        sources = discover_sources([root])
        assert [s.format for s in sources] == [fmt]
        store = Store(Path(tmp) / "data")
        try:
            summary = ingest_files(store, [LogSource(s.path, s.format) for s in sources])
        finally:
            store.close()
        assert summary.rejected == [] and summary.sessions == 1
        service = StoreQueryService(Path(tmp) / "data")
        try:
            (sid,) = [r.header.id for r in service.filter_sessions([])]
            texts = []
            for record in service.list_events(sid):
                window = service.read_event(sid, record.seq)  # the read path's shape check
                texts.append(extract_text(window.target.type, window.target.data))
        finally:
            service.close()
        searchable = "\n".join(texts)
        for kind, text in turns:
            assert (text in searchable) == (kind != "thinking"), (fmt, kind, text, texts)
