"""Import rate of every imported format next to the dsh reader, on the same volume.

1. the dsh side: the real corpus (``shared/corpus/dsh``, the valid logs)
   copied ``--copies`` times under fresh session ids;
2. the Claude Code side: a projects tree generated from the same logs -- every dsh user
   message, assistant content block (text, reasoning as thinking, tool call as
   ``tool_use``) and tool result becomes the Claude Code record that carries it -- copied
   until it holds at least as many bytes as the dsh side;
3. the Codex, Gemini CLI, Copilot CLI and OpenCode sides: the same conversations (each
   dsh log's prompts, answers, thinking, tool calls and results, in order) written in
   each format (``tests/importers/agent_logs.py``), copied until each holds at least
   the dsh side's bytes;
4. per side, in this process: (a) read every file (``read_source``: decode, map, fold),
   (b) ``ingest_files`` into a fresh data dir (read + store + commit); events/s and MB/s
   of each (OpenCode: all the session's message and part files counted), printed side by
   side with the machine size. ``--only dsh,codex`` runs some sides.

``python bench/bench_import.py --copies 4`` (default) reads about 60,000 dsh events.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final, cast

import orjson

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from indexer.logs.importers import LogFormat, LogSource
from indexer.logs.importers.detect import read_source
from indexer.logs.reader import LogRejectedError, SessionLog, read_log
from indexer.sources.files import ingest_files
from indexer.store.records.store import Store
from tests.importers.agent_logs import WRITERS, Turn

ROOT: Final = Path(__file__).resolve().parents[1]
CORPUS: Final = ROOT.parent / "shared" / "corpus" / "dsh"
OUT: Final = ROOT / "bench" / "out" / "import"
NAMESPACE: Final = uuid.UUID("6f1b3a52-5a51-4c59-9a7e-2f0c1b1d0c11")


def _iso(ms: int) -> str:
    moment = datetime.fromtimestamp(max(ms, 0) / 1000, tz=UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _valid_logs() -> list[SessionLog]:
    out = []
    for path in sorted(CORPUS.glob("*.jsonl")):
        try:
            out.append(read_log(path))
        except LogRejectedError:
            continue  # the three logs that are invalid on purpose
    return out


def _dsh_copy(path: Path, copy: int, out: Path) -> Path:
    """One dsh log under a new id (its header line rewritten, events byte for byte)."""
    head, _, rest = path.read_bytes().partition(b"\n")
    header = orjson.loads(head)
    header["id"] = str(uuid.uuid5(NAMESPACE, f"dsh-{copy}-{header['id']}"))
    header.pop("parentSession", None)
    target = out / f"{header['id']}.jsonl"
    target.write_bytes(orjson.dumps(header) + b"\n" + rest)
    return target


def _blocks(content: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            out.append({"type": "text", "text": block.get("text", "")})
        elif kind == "reasoning":
            out.append({"type": "thinking", "thinking": block.get("text", ""), "signature": "s"})
        elif kind == "tool-call":
            try:
                arguments = orjson.loads(block.get("arguments") or "{}")
            except orjson.JSONDecodeError:
                arguments = {"raw": block.get("arguments")}
            out.append(
                {
                    "type": "tool_use",
                    "id": block.get("id"),
                    "name": block.get("name"),
                    "input": arguments,
                }
            )
    return out


def _claude_records(log: SessionLog, session_id: str) -> Iterator[dict[str, Any]]:
    cwd = log.header.cwd or "/home/dev/bench"
    parent: str | None = None
    for event in log.events:
        data = event.data if isinstance(event.data, dict) else {}
        base: dict[str, Any] = {
            "parentUuid": parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": cwd,
            "sessionId": session_id,
            "version": "2.1.5",
            "gitBranch": "main",
            "uuid": str(uuid.uuid5(NAMESPACE, f"{session_id}-{event.seq}")),
            "timestamp": _iso(event.time),
        }
        message: dict[str, Any] = data["message"] if isinstance(data.get("message"), dict) else data
        if event.type == "user/message":
            content = _blocks(data.get("content"))
            yield {**base, "type": "user", "message": {"role": "user", "content": content}}
        elif event.type == "assistant/message":
            for block in _blocks(message.get("content")):
                yield {
                    **base,
                    "type": "assistant",
                    "requestId": "req",
                    "message": {
                        "id": f"msg_{event.seq}",
                        "type": "message",
                        "role": "assistant",
                        "model": "claude-sonnet-4-5",
                        "content": [block],
                        "usage": {"input_tokens": 1, "output_tokens": 1},
                    },
                }
        elif event.type == "tool/result":
            results = []
            for block in message.get("content") or []:
                if isinstance(block, dict) and block.get("type") == "tool-result":
                    texts = [b for b in block.get("content") or [] if isinstance(b, dict)]
                    results.append(
                        {
                            "type": "tool_result",
                            "tool_use_id": block.get("toolCallId"),
                            "content": [
                                {"type": "text", "text": b.get("text", "")}
                                for b in texts
                                if b.get("type") == "text"
                            ],
                            "is_error": bool(block.get("isError")),
                        }
                    )
            yield {**base, "type": "user", "message": {"role": "user", "content": results}}
        else:
            continue
        parent = base["uuid"]


def _claude_copy(log: SessionLog, copy: int, out: Path) -> Path | None:
    """A Claude Code transcript of the log's messages (``None``: the log holds none)."""
    session_id = str(uuid.uuid5(NAMESPACE, f"cc-{copy}-{log.header.id}"))
    lines = [orjson.dumps(r) for r in _claude_records(log, session_id)]
    if not lines:
        return None
    target = out / f"{session_id}.jsonl"
    target.write_bytes(b"\n".join(lines) + b"\n")
    return target


def _turns(log: SessionLog) -> list[Turn]:
    """A dsh log's conversation as agent-neutral turns (``agent_logs``)."""
    out: list[Turn] = []
    for event in log.events:
        data = event.data if isinstance(event.data, dict) else {}
        message = data["message"] if isinstance(data.get("message"), dict) else data
        if event.type == "user/message":
            text = "\n".join(b["text"] for b in _blocks(data.get("content")) if "text" in b)
            out.append(("user", text))
        elif event.type == "assistant/message":
            for block in _blocks(message.get("content")):
                if block["type"] == "text":
                    out.append(("assistant", block["text"]))
                elif block["type"] == "thinking":
                    out.append(("thinking", block["thinking"]))
                else:
                    out.append(("call", orjson.dumps(block["input"]).decode()))
        elif event.type == "tool/result":
            for block in message.get("content") or []:
                if isinstance(block, dict) and block.get("type") == "tool-result":
                    texts = [b.get("text", "") for b in block.get("content") or []
                             if isinstance(b, dict) and b.get("type") == "text"]
                    out.append(("result", "\n".join(texts)))
    return out


def _bytes(paths: list[Path]) -> int:
    total = 0
    for p in paths:
        if p.parent.parent.name == "session":  # OpenCode: the session's message and part files
            storage = p.parents[2]
            messages = list((storage / "message" / p.stem).glob("*.json"))
            parts = [f for m in messages for f in (storage / "part" / m.stem).glob("*.json")]
            total += sum(f.stat().st_size for f in messages + parts)
        total += p.stat().st_size
    return total


@dataclass
class Side:
    files: list[Path]
    read: Callable[[Path], SessionLog]
    fmt: LogFormat

    def read_all(self) -> tuple[int, float]:
        started = time.perf_counter()
        events = sum(len(read_source(LogSource(p, self.fmt)).events) for p in self.files)
        return events, time.perf_counter() - started

    def ingest(self, data: Path) -> tuple[int, float]:
        shutil.rmtree(data, ignore_errors=True)
        store = Store(data)
        started = time.perf_counter()
        try:
            summary = ingest_files(store, [LogSource(p, self.fmt) for p in self.files])
        finally:
            store.close()
        assert not summary.rejected, summary.rejected[:3]
        return summary.events, time.perf_counter() - started


def _machine() -> str:
    mem = "?"
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem = f"{int(line.split()[1]) / (1 << 20):.1f} GiB"
    except OSError:
        pass
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (
        f"{os.cpu_count()} cores, {mem} RAM, {platform.processor() or platform.machine()},"
        f" Python {platform.python_version()}, load {load:.2f} at start"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=4, help="copies of the dsh corpus")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--only", default="", help="comma-separated sides (formats) to run")
    args = parser.parse_args()
    shutil.rmtree(args.out, ignore_errors=True)
    dsh_dir, cc_dir = args.out / "dsh", args.out / "claude" / "-home-dev-bench"
    dsh_dir.mkdir(parents=True)
    cc_dir.mkdir(parents=True)
    logs = _valid_logs()
    dsh_files = [_dsh_copy(log.path, c, dsh_dir) for c in range(args.copies) for log in logs]
    cc_files: list[Path] = []
    copy = 0
    while _bytes(cc_files) < _bytes(dsh_files):
        cc_files += [p for log in logs if (p := _claude_copy(log, copy, cc_dir)) is not None]
        copy += 1
    sides = {
        "dsh reader": Side(dsh_files, read_log, "dsh"),
        "Claude Code importer": Side(cc_files, read_log, "claude-code"),
    }
    names = {"codex": "Codex importer", "gemini": "Gemini CLI importer",
             "copilot": "Copilot CLI importer", "opencode": "OpenCode importer"}  # fmt: skip
    turns = [t for log in logs if (t := _turns(log))]
    for fmt, name in names.items():
        root, copy = args.out / fmt, 0
        files: list[Path] = []
        while _bytes(files) < _bytes(dsh_files):
            for n, conversation in enumerate(turns):
                sid = str(uuid.uuid5(NAMESPACE, f"{fmt}-{copy}-{n}"))
                files.append(WRITERS[fmt](root, conversation, sid))
            copy += 1
        sides[name] = Side(sorted(files), read_log, cast(LogFormat, fmt))
    only = {f for f in args.only.split(",") if f}
    sides = {n: s for n, s in sides.items() if not only or s.fmt in only}
    print(f"machine: {_machine()}")
    print(f"{'':22} {'files':>6} {'MB':>7} {'events':>8} {'read ev/s':>10} {'read MB/s':>9}"
          f" {'ingest ev/s':>11} {'ingest MB/s':>11}")  # fmt: skip
    for name, side in sides.items():
        size = _bytes(side.files) / 1e6
        events, read_s = side.read_all()
        stored, ingest_s = side.ingest(args.out / f"data-{side.fmt}")
        assert stored == events, (stored, events)
        print(
            f"{name:22} {len(side.files):>6} {size:>7.1f} {events:>8} {events / read_s:>10,.0f}"
            f" {size / read_s:>9.1f} {events / ingest_s:>11,.0f} {size / ingest_s:>11.1f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
