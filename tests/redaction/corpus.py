"""A stored session log holding one made-up secret of every kind (``labelled.py``), in the
places secrets reach a log: prompts, a tool call's arguments (JSON in a string), a tool
result (``cat .env``), the title; and a clean caller session of the same workspace."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from tests.builders import BASE_TIME, assistant, header, title, user
from tests.redaction.labelled import KINDS, MAKERS, Labelled, labelled

LEAKY = "5ec2e75a-0000-4000-8000-000000000001"
CALLER = "5ec2e75a-0000-4000-8000-000000000002"
CWD = "/work/leaky"


def secrets_log(tmp: Path, seed: int = 23) -> tuple[list[Path], list[Labelled]]:
    """Two dsh logs (the leaky session, the caller) and the secrets the first holds."""
    rng = random.Random(seed)
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


def _write(path: Path, head: dict[str, Any], events: list[dict[str, Any]]) -> Path:
    lines = [json.dumps({"type": "session", **head})] + [json.dumps(e) for e in events]
    path.write_text("\n".join(lines) + "\n")
    return path
