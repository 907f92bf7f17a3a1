"""Ready-to-paste example calls: for a demo root from its summary (real ids, known
answers), for any other root from ``GET /v1/callers`` and ``GET /v1/sessions?caller=``
with the caller the console starts with (best effort)."""

from __future__ import annotations

import json
import re
import shlex
import urllib.parse
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from worker.devtools.demo_corpus.summary import SUMMARY_FILE, DemoSummary, load_summary


@dataclass(frozen=True, slots=True)
class ExampleCall:
    """One ready-to-send ``POST /v1/call`` body and what its reply text contains."""

    label: str
    body: dict[str, Any]
    expect: str

    def curl(self, base_url: str) -> str:
        payload = json.dumps(self.body, ensure_ascii=False, separators=(",", ":"))
        return (
            f"curl -sS {base_url.rstrip('/')}/v1/call"
            f" -H 'content-type: application/json' -d {shlex.quote(payload)}"
        )


def _call(tool: str, arguments: dict[str, Any], caller: str) -> dict[str, Any]:
    return {"tool": tool, "arguments": arguments, "caller": {"session_id": caller}}


def example_calls(summary: DemoSummary) -> list[ExampleCall]:
    """Four calls that show the corpus off, each with real ids and a non-empty answer:
    a Chinese and an English ``session_search`` with hits, ``session_trace`` on a
    subagent child and ``session_event_read`` on the compaction."""
    idem = summary.find("pay-idempotency")
    child = next(s for s in summary.subagents if s.parent == idem.id)
    payments_caller = summary.find("pay-webhook-retry")
    flaky = summary.find("shop-flaky-parser")
    shop_caller = summary.find("shop-cart-rounding")
    read_seq = idem.compaction_seq if idem.compaction_seq is not None else 0
    return [
        ExampleCall(
            "session_search in Chinese, from a payments-api session",
            _call("session_search", {"query": "幂等性"}, payments_caller.id),
            idem.id,
        ),
        ExampleCall(
            "session_search in English, from a web-shop session",
            _call("session_search", {"query": "flaky parser test"}, shop_caller.id),
            flaky.id,
        ),
        ExampleCall(
            "session_trace on a subagent child (its parent shows as ancestor)",
            _call("session_trace", {"session_id": child.id}, payments_caller.id),
            idem.id,
        ),
        ExampleCall(
            "session_event_read on the compaction that replaced earlier turns",
            _call(
                "session_event_read",
                {"session_id": idem.id, "seq": read_seq, "before": 1, "after": 1},
                payments_caller.id,
            ),
            f"Target event seq {read_seq}:",
        ),
    ]


def example_curls(summary: DemoSummary, base_url: str) -> list[str]:
    """``# label`` + ``curl …`` text blocks for :func:`example_calls`."""
    return [f"# {c.label}\n{c.curl(base_url)}" for c in example_calls(summary)]


def _get_json(base_url: str, path: str) -> Any:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(f"{base_url.rstrip('/')}{path}", timeout=10) as resp:
        return json.loads(resp.read())


def _generic_examples(base_url: str) -> list[ExampleCall]:
    """Calls for a real root (best effort), from the caller the console starts with —
    the first of ``GET /v1/callers``, the newest main session — and its workspace."""
    callers: list[dict[str, Any]] = _get_json(base_url, "/v1/callers")["callers"]
    if not callers:
        return []
    caller = callers[0]["id"]
    quoted = urllib.parse.quote(caller, safe="")
    sessions: list[dict[str, Any]] = _get_json(base_url, f"/v1/sessions?caller={quoted}")
    calls = [
        ExampleCall(
            "session_trace on the console's caller (the newest main session)",
            _call("session_trace", {}, caller),
            caller,
        ),
        ExampleCall(
            "session_event_read: its first events",
            _call("session_event_read", {"seq": 0, "after": 3}, caller),
            "Target event seq 0:",
        ),
    ]
    for other in sessions:
        words = re.findall(r"[A-Za-z]{4,}", str(other.get("title") or ""))
        if other["id"] != caller and words:
            calls.insert(
                0,
                ExampleCall(
                    "session_search from the same session",
                    _call("session_search", {"query": words[0]}, caller),
                    "",
                ),
            )
            break
    return calls


def print_examples(base_url: str, paths: Sequence[str | Path] = ()) -> None:
    """Print the console URL and example curl calls for the served ``paths``."""
    base_url = base_url.rstrip("/")
    calls: list[ExampleCall] = []
    problem = None
    if len(paths) == 1 and (Path(paths[0]) / SUMMARY_FILE).is_file():
        calls = example_calls(load_summary(Path(paths[0])))
    else:
        try:
            calls = _generic_examples(base_url)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            problem = f"(no example calls: {exc})"
    # The console picks its caller (the newest main session); ?caller=<id> pins another.
    print(f"sessionq console: {base_url}/")
    if problem:
        print(problem)
    if calls:
        print("Example calls (paste into another terminal):")
        for c in calls:
            print(f"# {c.label}\n{c.curl(base_url)}")
    print("(Ctrl-C stops the server)", flush=True)
