"""A partitioned node with a keyring authenticates a request before its routing is
judged: an unauthenticated request gets the one fixed ``CALLER_UNAUTHENTICATED``
refusal whatever its caller id and key (no oracle for which session ids exist, or
where), and only an authenticated caller is told its call is misrouted."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from indexer.kafka.node_group import partition_for
from tests.builders import header, user
from tests.fixtures.kafka import UniqueName
from tests.fixtures.waiting import wait_until
from tests.kafka.harness import product_topics
from tests.kafka.nodes import covered, spawn_node, workspaces_on_distinct_partitions
from tests.kafka.processes import Processes
from tests.kafka.records import (
    RawProducer,
    ReplyTap,
    events_record,
    header_record,
    request_record,
)
from worker.authn.keyring import keyring_entry
from worker.authn.tokens import CallerSigner, generate_key_pair
from worker.contract.errors import CALLER_UNAUTHENTICATED, MISROUTED, UNAUTHENTICATED_MESSAGE

pytestmark = pytest.mark.kafka
PARTITIONS = 4
KNOWN = "node-authn-known"


def signer(tmp_path: Path, kid: str) -> tuple[CallerSigner, dict[str, Any]]:
    private, public = generate_key_pair()
    path = tmp_path / f"{kid}.key"
    path.write_text(private)
    return CallerSigner.from_file(kid, path), keyring_entry(kid, public, ["/"])


def lineage_knows(node_dir: Path, session_id: str) -> bool:
    path = node_dir / "lineage.sqlite3"
    if not path.exists():
        return False
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
    try:
        row = conn.execute("SELECT 1 FROM lineage WHERE id = ?", (session_id,)).fetchone()
    except sqlite3.OperationalError:
        return False
    finally:
        conn.close()
    return row is not None


def signed(host: CallerSigner, record: dict[str, Any], workspace: str) -> dict[str, Any]:
    token = host.sign(record, workspace)
    return {**record, "caller": {**record["caller"], "token": token}}


async def test_a_node_refuses_unauthenticated_requests_alike_before_judging_routing(
    kafka_bootstrap: str, unique_name: UniqueName, tmp_path: Path
) -> None:
    home_ws, other_ws = workspaces_on_distinct_partitions(PARTITIONS, 2)
    home, other = (partition_for(w.encode(), PARTITIONS) for w in (home_ws, other_ws))
    host, entry = signer(tmp_path, "host")
    stranger, _ = signer(tmp_path, "stranger")  # a key the keyring does not hold
    keyring = tmp_path / "keyring.json"
    keyring.write_text(json.dumps({"keys": [entry]}))
    async with product_topics(kafka_bootstrap, unique_name("nauth"), PARTITIONS) as (topics, _):
        async with RawProducer(kafka_bootstrap) as producer:
            await producer.send_json(
                topics.events, header_record(header(KNOWN, cwd=home_ws)), key=home_ws
            )
            await producer.send_json(
                topics.events, events_record(KNOWN, [user(0, "kestrel")]), key=home_ws
            )
        procs = Processes(tmp_path, topics)
        try:
            node = spawn_node(
                procs, topics, unique_name("group"), tmp_path / "node", "node", keyring=keyring
            )
            await wait_until(
                lambda: (
                    not node.proc.alive()
                    or (covered([node], PARTITIONS) and lineage_knows(node.data, KNOWN))
                ),
                timeout=180,
                what="the node to own every partition and know the caller's lineage",
                interval=0.5,
            )
            assert node.proc.alive(), node.proc.log()[-2000:]

            def request(rid: str, caller: str) -> dict[str, Any]:
                return request_record(
                    rid, topics.replies, "session_trace", {}, session_id=caller, timeout_ms=60000
                )

            # (id, record, key, partition): every one on a partition its caller is not in
            unauthenticated = [
                ("anon-known", request("anon-known", KNOWN), other_ws, other),
                ("anon-unknown", request("anon-unknown", "no-such-session"), other_ws, other),
                ("anon-key", request("anon-key", KNOWN), home_ws, other),
                ("forged", signed(stranger, request("forged", KNOWN), home_ws), other_ws, other),
            ]

            def vouched(rid: str) -> dict[str, Any]:
                return signed(host, request(rid, KNOWN), home_ws)

            authenticated = [
                ("signed-key", vouched("signed-key"), home_ws, other),  # its key routes elsewhere
                # its key routes here, but the workspace its token names lives elsewhere
                ("signed-ws", vouched("signed-ws"), other_ws, other),
                ("signed-home", vouched("signed-home"), home_ws, home),
            ]
            async with (
                ReplyTap(kafka_bootstrap, topics.replies) as tap,
                RawProducer(kafka_bootstrap) as producer,
            ):
                for _, record, key, partition in unauthenticated + authenticated:
                    await producer.send_json(topics.requests, record, key=key, partition=partition)
                ids = [rid for rid, *_ in unauthenticated + authenticated]
                replies = await tap.wait_for(ids, timeout=30)  # far below their deadline
        finally:
            procs.stop_all()
    for rid, *_ in unauthenticated:
        error = replies[rid].error
        assert error is not None, (rid, replies[rid])
        assert (error.code, error.message) == (CALLER_UNAUTHENTICATED, UNAUTHENTICATED_MESSAGE)
    key_error, ws_error = replies["signed-key"].error, replies["signed-ws"].error
    assert key_error is not None and key_error.code == MISROUTED
    assert f"routes to partition {home} of {PARTITIONS}" in key_error.message
    assert ws_error is not None and ws_error.code == MISROUTED
    assert f"lives in partition {home} of {PARTITIONS}" in ws_error.message
    assert replies["signed-home"].ok, replies["signed-home"]
    assert KNOWN in (replies["signed-home"].text or "")
    log = node.proc.log()
    for rid, *_ in unauthenticated:
        assert f"request {rid} misrouted" not in log
