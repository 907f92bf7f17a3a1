"""The TypeScript host client (``clients/typescript``) against this side of the protocol.

* its own tests (``node --test``): the protocol's test vectors and formats;
* the oracle: the ``req`` digest of a generated set of requests (unicode, lone
  surrogates, numbers at the I-JSON edges, nesting) equals ``worker.authn.binding``'s,
  key placement equals aiokafka's murmur2 for the same keys, and the tool definitions
  equal ``sessionq manifest``;
* end to end over a real broker, with the real indexer (started here) and workers (started
  and killed by the TypeScript side): the real corpus published, every tool's answer equal
  to ``sessionq call --data``'s, its tokens accepted and a tampered one refused, a cancel,
  a followed log, a delete, and a worker killed mid-call.

The package is installed with ``npm ci`` from its lock file and built with ``tsc``.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from aiokafka.partitioner import murmur2

from indexer.errors import ErrorCode
from tests.fixtures.kafka import KafkaCase
from tests.fixtures.processes import REPO, sessionq
from tests.kafka.harness import create_topics, ingest_reference
from tests.kafka.processes import Processes
from tests.kafka.test_e2e import CALLS
from worker.authn.binding import envelope_digest
from worker.contract.boundary import SAFE_FAILURES

PACKAGE = REPO / "clients" / "typescript"
NPM_TIMEOUT_S = 600


def _tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        missing = f"{name} is not on PATH: the TypeScript client's tests need Node 20"
        pytest.fail(missing, pytrace=False)
    return found


def npm(*args: str) -> None:
    """``npm ARGS`` in the package, to a zero exit."""
    done = subprocess.run(
        [_tool("npm"), *args], cwd=PACKAGE, capture_output=True, text=True,
        timeout=NPM_TIMEOUT_S, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.fixture(scope="session")
def ts_package() -> Path:
    """The package installed (``npm ci``, once per lock file) and built (``tsc``)."""
    stamp = PACKAGE / "node_modules" / ".lock-installed"
    lock = (PACKAGE / "package-lock.json").read_text()
    if not stamp.exists() or stamp.read_text() != lock:
        npm("ci", "--no-audit", "--no-fund")
        stamp.write_text(lock)
    npm("run", "build")
    return PACKAGE


def node(
    *args: str | Path,
    timeout: float = 120,
    env: dict[str, str] | None = None,
    log: Path | None = None,
) -> str:
    """``node ARGS`` in the package to its end; its output (also in ``log`` as it runs)."""
    out = log or PACKAGE / "dist" / "node-output.log"
    with out.open("w") as sink:
        proc = subprocess.Popen(
            [_tool("node"), *map(str, args)],
            cwd=PACKAGE,
            stdout=sink,
            stderr=subprocess.STDOUT,
            env=env,
            text=True,
        )
        try:
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            code = None
    text = out.read_text(errors="replace")
    ended = "timed out" if code is None else f"exit {code}"
    assert code == 0, f"node {args} ({ended}):\n{text[-8000:]}"
    return text


def test_the_package_s_own_tests(ts_package: Path) -> None:
    out = node("--test", "dist/test/unit.test.js")
    assert "# fail 0" in out and "# pass 8" in out, out


# ---- the oracle ------------------------------------------------------------------------------
EDGE_NUMBERS = [
    0,
    -0.0,
    1,
    -1,
    1.0,
    0.5,
    1e21,
    1e-7,
    2**53 - 1,
    -(2**53 - 1),
    1.7976931348623157e308,
    5e-324,
    123456789.125,
    2**53,
    -(2**53),
    2**64,
]
# "\ud83d" never meets a low surrogate: a JavaScript string cannot tell such a pair from
# the character it makes, so the two values would not be one request on both sides
TEXTS = [
    "",
    "café",
    "😀",
    "\ud83d",
    "a\ude00b",
    "\u2028\u2029",
    '\x00\x1f"\\/',
    "中文",
    "e\u0301",
    "\uffff",
    "<script>",
    "tab\tnew\nline",
]


def _value(rng: random.Random, depth: int) -> Any:
    kind = rng.randrange(6 if depth < 4 else 3)
    if kind == 0:
        return rng.choice(EDGE_NUMBERS) if rng.random() < 0.6 else rng.uniform(-1e6, 1e6)
    if kind == 1:
        return "".join(rng.choice(TEXTS) for _ in range(rng.randrange(4)))
    if kind == 2:
        return rng.choice([None, True, False])
    if kind == 3:
        return [_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {
        "".join(rng.choice(TEXTS) for _ in range(2)) or "k": _value(rng, depth + 1)
        for _ in range(rng.randrange(4))
    }


def generated_requests(count: int, seed: int = 38) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    out = []
    for i in range(count):
        caller: dict[str, Any] = {"session_id": f"s-{i}", "token": "left out"}
        if rng.random() < 0.5:
            caller["step_seq"] = rng.randrange(1000)
        out.append(
            {
                "v": 1,
                "kind": "request",
                "id": f"r-{i}",
                "reply_to": "sessionq.replies",
                "tool": "session_search",
                "arguments": _value(rng, 0),
                "caller": caller,
                "timeout_ms": rng.choice([1000, 30000, 2.5e4]),
            }
        )
    return out


def test_digests_placement_and_tool_definitions_equal_this_side_s(
    ts_package: Path, tmp_path: Path
) -> None:
    requests = generated_requests(400)
    keys = ["/home/dev/acp-agent", "session:x", "", "中文/路径", "/w/é"]
    keys += [f"/k/{i}" for i in range(60)]
    job = tmp_path / "job.json"
    # lone surrogates travel as JSON escapes, as a JavaScript host would read them
    job.write_text(json.dumps({"requests": requests, "keys": keys, "partitions": [1, 3, 7, 12]}))
    node("dist/test/oracle.js", job, tmp_path / "out.json")
    out = json.loads((tmp_path / "out.json").read_text())

    expected = [envelope_digest(r) for r in requests]
    assert sum(d is None for d in expected) > 10 and sum(d is not None for d in expected) > 300
    for request, mine, theirs in zip(requests, expected, out["digests"], strict=True):
        assert theirs == mine, request
    for n, placed in out["partitions"].items():
        assert placed == [(murmur2(k.encode()) & 0x7FFFFFFF) % int(n) for k in keys], n
    declared = json.loads(sessionq("manifest").stdout)
    assert out["manifest"] == declared
    shipped = json.loads((PACKAGE / "manifest.json").read_text())
    regenerate = "run `sessionq manifest > clients/typescript/manifest.json`"
    assert shipped == declared, regenerate
    assert sorted(out["codes"]) == sorted(reply_codes())


def reply_codes() -> set[str]:
    """Every code a reply's error can carry: the closed set but for sessionq's own record
    and delivery codes and the service codes the reply boundary replaces."""
    replaced = {code for code, (shown, _) in SAFE_FAILURES.items() if shown != code}
    return {c.value for c in ErrorCode if not c.startswith("SESSIONQ_") and c not in replaced}


# ---- end to end --------------------------------------------------------------------------------
@pytest.mark.slow
async def test_a_typescript_host_against_the_python_workers(
    ts_package: Path, kafka_case: KafkaCase, corpus_dir: Path
) -> None:
    kafka_bootstrap, topic_factory, unique_name, tmp_path = kafka_case.parts()
    topics = await create_topics(kafka_bootstrap, topic_factory, events=3, requests=3, replies=2)
    reference, data = tmp_path / "reference", tmp_path / "data"
    ingest_reference(reference, [corpus_dir])
    calls = []
    for call in CALLS:
        argv = ["call", "--data", str(reference), "--caller", call.caller, "--json"]
        if call.step_seq is not None:
            argv += ["--step-seq", str(call.step_seq)]
        done = sessionq(*argv, call.tool, json.dumps(call.arguments))
        assert done.returncode == 0, done.stderr
        reply = json.loads(done.stdout)
        reply.pop("id"), reply.pop("v")
        calls.append(
            {
                "tool": call.tool,
                "args": call.arguments,
                "caller": call.caller,
                "stepSeq": call.step_seq,
                "routingKey": call.routing_key,
                "reply": reply,
            }
        )
    assert calls[0]["tool"] == "session_search" and calls[0]["reply"]["ok"]
    keys = tmp_path / "py-keys"
    made = sessionq(
        "keys",
        "generate",
        "--kid",
        "py-host",
        "--out",
        str(keys),
        "--workspace",
        "/home/dev/acp-agent",
    )
    assert made.returncode == 0, made.stderr
    config = {
        "bootstrap": kafka_bootstrap,
        "topics": {
            "events": topics.events,
            "requests": topics.requests,
            "replies": topics.replies,
            "dlq": topics.dlq,
        },
        "python": sys.executable,
        "repo": str(REPO),
        "data": str(data),
        "work": str(tmp_path / "ts"),
        "group": unique_name("ts-workers"),
        "corpus": sorted(str(p) for p in corpus_dir.glob("*.jsonl")),
        "pythonKey": {
            "kid": "py-host",
            "key": str(keys / "py-host.key"),
            "entry": str(keys / "py-host.entry.json"),
        },
        "calls": calls,
    }
    (tmp_path / "e2e.json").write_text(json.dumps(config))
    procs = Processes(tmp_path, topics)
    procs.spawn("indexer", "indexer", "--bootstrap", kafka_bootstrap, "--data", str(data))
    try:
        env = {**os.environ, "SESSIONQ_TS_E2E": str(tmp_path / "e2e.json")}
        out = node(
            "--test",
            "--test-timeout=600000",
            "dist/test/broker.e2e.js",
            timeout=900,
            env=env,
            log=tmp_path / "node.log",
        )
        assert "# fail 0" in out and "# pass 9" in out, out  # the test and its 8 parts
    finally:
        procs.stop_all()
