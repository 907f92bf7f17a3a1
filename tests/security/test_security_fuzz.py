"""The security fuzz of issue 9 (part 7), over the real transport: 10,000 requests that
mix valid, forged, expired, replayed, rebound (a captured token on another query and
reply topic) and wrong-workspace caller tokens, foreign cancels and refused ``reply_to``
topics, against a worker with a keyring. Outcome: no reply carries another workspace's
session ids or text, no reply goes anywhere but the allowed reply topic, no foreign
cancel stops a call, and every bad token gets the one closed refusal.

The outcome cannot depend on the machine's speed: requests go out in waves of
``WAVE``, each signed just before it is sent with the longest token lifetime (300 s)
and a deadline of an hour, and the next wave waits for every reply of the last, so no
valid token expires and no call meets its deadline however slowly the worker runs."""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections import Counter
from pathlib import Path
from typing import Any

import jwt
import pytest

from tests.builders import header, user
from tests.fixtures.kafka import KafkaCase
from tests.fixtures.waiting import wait_until
from tests.kafka.harness import (
    caught_up,
    create_topics,
    end_offsets,
    read_topic,
    running_indexer,
    running_worker,
    wait_assigned,
)
from tests.kafka.records import RawProducer, ReplyTap, events_record, header_record, routing_key
from worker.authn.binding import envelope_digest
from worker.authn.keyring import keyring_entry
from worker.authn.tokens import MAX_LIFETIME_S, CallerSigner, generate_key_pair
from worker.calls.limits import ToolLimits
from worker.contract.errors import CALLER_UNAUTHENTICATED

pytestmark = pytest.mark.kafka

REQUESTS = 10_000
WAVE = 1_000
HOUR_MS = 3_600_000
WORKSPACES = {"/work/a": ["fz-a1", "fz-a2", "fz-a3"], "/work/b": ["fz-b1", "fz-b2", "fz-b3"]}
SECRET = {sid: f"secret{sid.replace('-', '')}" for ids in WORKSPACES.values() for sid in ids}
CWD = {sid: ws for ws, ids in WORKSPACES.items() for sid in ids}


def make_signer(tmp_path: Path, kid: str, workspaces: list[str]) -> tuple[CallerSigner, dict]:
    private, public = generate_key_pair()
    (tmp_path / f"{kid}.key").write_text(private)
    return CallerSigner.from_file(kid, tmp_path / f"{kid}.key", ttl_s=MAX_LIFETIME_S), (
        keyring_entry(kid, public, workspaces)
    )


async def test_security_fuzz_over_kafka(kafka_case: KafkaCase) -> None:
    kafka_bootstrap, topic_factory, unique_name, tmp_path = kafka_case.parts()
    rng = random.Random(9)
    topics = await create_topics(kafka_bootstrap, topic_factory, events=1, requests=2)
    kafka = topics.kafka()
    data = tmp_path / "data"
    signers = {}
    entries = []
    for kid, ws in (("host-a", "/work/a"), ("host-b", "/work/b")):
        signers[ws], entry = make_signer(tmp_path, kid, [ws])
        entries.append(entry)
    rogue, _ = make_signer(tmp_path, "host-a", ["*"])  # same kid, not in the keyring
    keyring = tmp_path / "keyring.json"
    keyring.write_text(json.dumps({"keys": entries}))

    async with (
        running_indexer(data, kafka, batch_ms=20),
        RawProducer(kafka_bootstrap, max_request_size=8 * 1024 * 1024) as producer,
    ):
        for sid, ws in CWD.items():
            head = header(sid, cwd=ws)
            key = routing_key(head)
            await producer.send_json(topics.events, header_record(head), key=key)
            await producer.send_json(
                topics.events, events_record(sid, [user(0, f"{SECRET[sid]} shared needle")]),
                key=key,
            )
        await wait_until(
            lambda: caught_up(data, kafka_bootstrap, topics.events),
            timeout=60, what="the indexer to catch up", interval=0.05,
        )
        events_end = await end_offsets(kafka_bootstrap, topics.events)
        async with (
            running_worker(
                data, kafka, unique_name("group"), keyring=keyring,
                tools=ToolLimits(max_timeout_ms=HOUR_MS, search_timeout_ms=HOUR_MS),
                max_admitted_per_host=1024, max_admitted_per_workspace=1024,
            ) as worker,
            ReplyTap(kafka_bootstrap, topics.replies) as tap,
        ):
            await wait_assigned(worker, 2)
            plan: dict[str, tuple[str, str, str]] = {}  # id -> (kind, caller, reply_to)
            replies = {}
            refused_topics = [topics.events, topics.requests, topics.dlq, "__consumer_offsets"]
            for wave in range(0, REQUESTS, WAVE):
                sends = [
                    sent for n in range(wave, wave + WAVE)
                    for sent in fuzz_records(rng, n, signers, rogue, topics.replies,
                                             refused_topics, plan)
                ]
                for start in range(0, len(sends), 500):
                    await asyncio.gather(
                        *(producer.send_json(topics.requests, record, key=ws)
                          for record, ws in sends[start : start + 500])
                    )
                answered = [
                    rid for rid, (kind, _, _) in plan.items()
                    if kind != "reply-to" and rid not in replies
                ]
                replies.update(await tap.wait_for(answered, timeout=MAX_LIFETIME_S))
            await asyncio.sleep(1.0)  # let any stray reply to a refused topic land too

    outcomes: Counter[str] = Counter()
    for rid, reply in replies.items():
        kind, caller, _ = plan[rid]
        text = reply.text or ""
        foreign = [s for s in CWD if CWD[s] != CWD[caller]]
        assert not any(s in text or SECRET[s] in text for s in foreign), (rid, kind, text)
        if kind in ("forged", "expired", "replayed", "rebound", "wrong-ws", "rogue"):
            assert reply.error is not None and reply.error.code == CALLER_UNAUTHENTICATED, (
                rid, kind, reply,
            )
            outcomes["refused"] += 1
        else:
            assert reply.error is None or reply.error.code != CALLER_UNAUTHENTICATED, (rid, reply)
            assert reply.error is None or reply.error.code not in (
                "TOOL_CANCELLED", "SESSION_QUERY_ABORTED"
            ), (rid, kind, reply)
            outcomes["answered"] += 1
    refused_ids = {rid for rid, (kind, _, _) in plan.items() if kind == "reply-to"}
    assert not refused_ids & set(tap.by_id()), "a reply went to the allowed topic for a refused one"
    assert await end_offsets(kafka_bootstrap, topics.events) == events_end  # nothing written there
    letters = [json.loads(r.value) for r in await read_topic(kafka_bootstrap, topics.dlq)]
    assert all("ok" not in letter and "reason" in letter for letter in letters)  # no reply
    assert len({letter["source"]["offset"] for letter in letters}) >= len(refused_ids)
    on_requests = [json.loads(r.value) for r in await read_topic(kafka_bootstrap, topics.requests)]
    assert all(record.get("kind") in ("request", "cancel") for record in on_requests)
    counts = Counter(kind for kind, _, _ in plan.values())
    print(f"security fuzz: {REQUESTS} requests {dict(counts)}; outcomes {dict(outcomes)};"
          f" {len(refused_ids)} refused reply topics dead-lettered, 0 foreign text,"
          f" 0 foreign cancels honoured")


def fuzz_records(
    rng: random.Random,
    n: int,
    signers: dict[str, CallerSigner],
    rogue: CallerSigner,
    replies_topic: str,
    refused_topics: list[str],
    plan: dict[str, tuple[str, str, str]],
) -> list[tuple[dict[str, Any], str]]:
    """Request ``n`` of the fuzz (and its foreign cancel), signed now; planned in ``plan``."""
    rid = f"fz-{n}"
    caller = rng.choice(list(CWD))
    ws = CWD[caller]
    other_ws = next(w for w in WORKSPACES if w != ws)
    kind = rng.choices(
        ["valid", "forged", "expired", "replayed", "rebound", "wrong-ws", "rogue",
         "reply-to", "foreign-cancel"],
        weights=[30, 8, 8, 6, 6, 10, 6, 10, 20],
    )[0]
    reply_to = rng.choice(refused_topics) if kind == "reply-to" else replies_topic
    tool, arguments = rng.choice(
        [
            ("session_search", {"query": "shared needle"}),
            ("session_search", {"query": "needle", "include_root_sessions": True}),
            ("session_trace", {"session_id": rng.choice(list(CWD))}),
            ("session_event_read", {"session_id": rng.choice(list(CWD)), "seq": 0}),
        ]
    )
    body: dict[str, Any] = {
        "v": 1, "kind": "request", "id": rid, "reply_to": reply_to, "tool": tool,
        "arguments": arguments, "timeout_ms": HOUR_MS, "caller": {"session_id": caller},
    }
    signer = signers[ws]
    token: str | None = signer.sign(body, ws)
    if kind == "forged":
        token = rng.choice([None, "x.y.z", token[:-4] + "AAAA"])
    elif kind == "expired":
        now = int(time.time())
        token = jwt.encode(
            {"rid": rid, "sub": caller, "ws": ws, "req": envelope_digest(body),
             "iat": now - 600, "exp": now - 300},
            signer._key, algorithm="EdDSA", headers={"kid": signer.kid},
        )
    elif kind == "replayed":
        token = signer.sign({**body, "id": f"fz-{n}-original"}, ws)
    elif kind == "rebound":  # the victim's own request, re-aimed by whoever captured it
        victim = {**body, "arguments": {"query": "needle"}, "reply_to": replies_topic + ".x"}
        token = signer.sign(victim, ws)
    elif kind == "wrong-ws":
        token = signers[other_ws].sign(body, other_ws)  # lies about the cwd
    elif kind == "rogue":
        token = rogue.sign(body, ws)
    request = {**body, "caller": {"session_id": caller, **({"token": token} if token else {})}}
    plan[rid] = (kind, caller, reply_to)
    out = [(request, ws)]
    if kind == "foreign-cancel":
        reason = {"code": "SESSION_QUERY_ABORTED", "message": "stolen"}
        cancel: dict[str, Any] = {"v": 1, "kind": "cancel", "id": rid, "reason": reason,
                                  "caller": {"session_id": caller}}
        thief = rng.choice(["unsigned", "other-host", "rogue", "request-token"])
        cancel_token = {
            "unsigned": None,
            "other-host": signers[other_ws].sign(cancel, ws),
            "rogue": rogue.sign(cancel, ws),
            "request-token": token,  # the request's own token is not a cancel's
        }[thief]
        if cancel_token:
            cancel["caller"] = {"session_id": caller, "token": cancel_token}
        out.append((cancel, ws))
    return out
