"""A stored session log holding one made-up secret of every kind (``labelled.py``), in the
places secrets reach a log: prompts, a tool call's arguments (JSON in a string), a tool
result (``cat .env``), the title; and a clean caller session of the same workspace."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from tests.builders import BASE_TIME, assistant, chunk, header, plain, title, user
from tests.redaction.labelled import KINDS, MAKERS, Labelled, labelled

LEAKY = "5ec2e75a-0000-4000-8000-000000000001"
CALLER = "5ec2e75a-0000-4000-8000-000000000002"
CWD = "/work/leaky"
STREAMED: list[int] = []
"""Seqs of the text-delta chunks that stream a secret, 3 characters each."""


def secrets_log(tmp: Path, seed: int = 23) -> tuple[list[Path], list[Labelled]]:
    """Two dsh logs (the leaky session, the caller) and the secrets the first holds."""
    rng = random.Random(seed)
    tmp.mkdir(parents=True, exist_ok=True)
    items = labelled(rng, 1)
    events: list[dict[str, Any]] = []
    for item in items:
        events.append(user(len(events), item.text))
    gh = MAKERS["github-token"][0](rng)
    args = json.dumps({"command": f"export GITHUB_TOKEN={gh}\ngit push", "timeout": 30})
    events.append(
        {
            "type": "tool/call",
            "seq": len(events),
            "time": BASE_TIME + len(events) * 1000,
            "data": {"turn": 1, "step": 1, "callId": "call-1", "name": "bash", "arguments": args},
        }
    )
    items.append(Labelled("github-token", gh, args))
    slack = MAKERS["slack-token"][0](rng)
    events.append(assistant(len(events), f"I used SLACK_BOT_TOKEN={slack} for the bot."))
    items.append(Labelled("slack-token", slack, ""))
    streamed = MAKERS["anthropic-api-key"][0](rng)
    said = f"Set ANTHROPIC_API_KEY={streamed} and retry."
    first = len(events)
    events.append(_chunk(first, {"type": "block-start", "index": 0, "blockType": "text"}))
    for i in range(0, len(said), 3):
        events.append(chunk(len(events), said[i : i + 3]))
    events.append(
        _chunk(
            len(events), {"type": "block-end", "index": 0, "block": {"type": "text", "text": said}}
        )
    )
    STREAMED[:] = range(first + 1, len(events) - 1)
    items.append(Labelled("anthropic-api-key", streamed, ""))
    title_token = MAKERS["github-token"][0](rng)
    events.append(title(len(events), f"rotate {title_token} today"))
    items.append(Labelled("github-token", title_token, ""))
    leaky = _write(tmp / "leaky.jsonl", header(LEAKY, cwd=CWD), events)
    caller = _write(
        tmp / "caller.jsonl",
        header(CALLER, cwd=CWD, created_at=BASE_TIME + 1),
        [user(0, "what did we deploy last week")],
    )
    assert {i.kind for i in items} >= set(KINDS)
    return [leaky, caller], items


def _chunk(seq: int, chunk_data: dict[str, Any]) -> dict[str, Any]:
    return plain(seq, "assistant/chunk", {"turn": 1, "step": 1, "chunk": chunk_data})


def _write(path: Path, head: dict[str, Any], events: list[dict[str, Any]]) -> Path:
    lines = [json.dumps({"type": "session", **head})] + [json.dumps(e) for e in events]
    path.write_text("\n".join(lines) + "\n")
    return path
