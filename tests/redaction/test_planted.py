"""The shapes an attacker's pass planted (``labelled.planted``) are redacted in every string
the redaction module derives: index text (``Redaction.text``), an event's JSON
(``Redaction.events``), JSON inside a string of it (a tool call's ``arguments``), and a
member whose name says secret holding the bare value."""

from __future__ import annotations

import json
import random
from collections import Counter
from typing import Any

import pytest

from indexer.model import SessionEvent
from indexer.redact import Redaction
from tests.redaction.labelled import Labelled, planted
from tests.redaction.test_recall import survives

ON = Redaction("on")
PLANTED = planted(random.Random(34))
NAMED = {
    "secret-assignment": ["AWS_SESSION_TOKEN", "SessionToken", "SECRET_KEY"],
    "password-assignment": ["DB_PASSWORD", "password", "PGPASSWORD"],
    "api-key-header": ["X-API-Key", "api-key", "X-Auth-Token"],
}


def _event(data: dict[str, Any], seq: int = 0) -> SessionEvent:
    return SessionEvent.from_obj({"type": "tool/call", "seq": seq, "time": 1, "data": data})


def _shown(event: SessionEvent) -> str:
    """The event as a reader prints it: redacted, and its strings decoded once more."""
    raw = ON.events([event])[0].raw.decode()
    return raw + "\n" + json.dumps(json.loads(raw), ensure_ascii=False)


@pytest.mark.parametrize("item", PLANTED, ids=lambda i: f"{i.kind}:{i.text[:30]}")
def test_index_text_holds_no_planted_secret(item: Labelled) -> None:
    counts: Counter[str] = Counter()
    out = ON.text(item.text, counts)
    assert not survives(item.secret, out), out
    assert item.kind in counts, counts


@pytest.mark.parametrize("item", PLANTED, ids=lambda i: f"{i.kind}:{i.text[:30]}")
def test_events_hold_no_planted_secret_as_text_or_as_json_in_a_string(item: Labelled) -> None:
    as_text = _event({"name": "bash", "output": item.text})
    args = json.dumps({"command": item.text, "timeout": 30})
    as_arguments = _event({"name": "bash", "arguments": args}, 1)
    for event in (as_text, as_arguments):
        shown = _shown(event)
        assert not survives(item.secret, shown), shown
        assert f"[REDACTED:{item.kind}]" in shown


@pytest.mark.parametrize(("kind", "name"), [(k, n) for k, ns in NAMED.items() for n in ns])
def test_a_member_named_so_holding_a_planted_value_is_redacted(kind: str, name: str) -> None:
    for item in (i for i in PLANTED if i.kind == kind):
        event = _event({"env": {name: item.secret}, "cwd": "/srv/app"})
        shown = _shown(event)
        assert not survives(item.secret, shown), (name, shown)
