"""``sessionq call --bootstrap`` refused by workers with a keyring (a real broker, a real
worker, the CLI as a subprocess, keys made by ``sessionq keys generate``): the reply
stays ``SESSION_QUERY_CALLER_UNAUTHENTICATED`` with its one fixed message, and stderr
names the likely cause — no signing key, no workspace, a workspace the key's entry does
not cover, a key the keyring lacks, a caller whose stored cwd is not the workspace —
while a request the key vouches for is answered with no hint. A caller the store does
not know is no refusal: the worker waits for it to be indexed until the deadline.
The hint's wording is unit-tested too."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.builders import header
from tests.data_paths import REPO_ROOT
from tests.fixtures.kafka import KafkaCase
from tests.fixtures.mcp import subprocess_env
from tests.kafka.harness import (
    Topics,
    create_topics,
    publish_texts,
    running_indexer,
    running_worker,
    wait_assigned,
)
from tests.kafka.records import RawProducer
from worker.authn.tokens import CallerSigner
from worker.contract.errors import CALLER_UNAUTHENTICATED, UNAUTHENTICATED_MESSAGE
from worker.host.preflight import UNSIGNED, caller_warnings, refusal_hint

A = header("hint-a", cwd="/work/a")
B = header("hint-b", cwd="/work/b")
A2 = header("hint-a2", cwd="/work/a")
REFUSED = f"{CALLER_UNAUTHENTICATED}: {UNAUTHENTICATED_MESSAGE}"


def keys_generate(keys: Path, kid: str, workspace: str, keyring: Path | None) -> Path:
    argv = [sys.executable, "-m", "worker", "keys", "generate", "--kid", kid]
    argv += ["--out", str(keys), "--workspace", workspace]
    if keyring is not None:
        argv += ["--keyring", str(keyring)]
    done = subprocess.run(
        argv, cwd=REPO_ROOT, env=subprocess_env(), capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return keys / f"{kid}.key"


async def call(topics: Topics, caller: str, *extra: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "worker", "call", "session_search", '{"query": "needle"}']
    argv += ["--bootstrap", topics.bootstrap, "--caller", caller]
    argv += list(extra) if "--timeout-ms" in extra else [*extra, "--timeout-ms", "20000"]
    env = subprocess_env(**topics.env())
    return await asyncio.to_thread(
        subprocess.run,
        argv,
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def refused_with(done: subprocess.CompletedProcess[str], cause: str) -> list[str]:
    """The stderr lines of a refused call: the fixed refusal, and the likely cause."""
    lines = done.stderr.strip().splitlines()
    assert done.returncode != 0, done
    assert "Traceback" not in done.stderr, done.stderr
    assert REFUSED in lines, done.stderr
    assert f"sessionq call: likely cause: {cause}" in lines, done.stderr
    return lines


@pytest.mark.kafka
async def test_a_refused_cli_call_names_its_likely_cause(kafka_case: KafkaCase) -> None:
    kafka_bootstrap, topic_factory, unique_name, tmp_path = kafka_case.parts()
    topics = await create_topics(kafka_bootstrap, topic_factory, events=1, requests=2)
    kafka = topics.kafka()
    data, keys, keyring = tmp_path / "data", tmp_path / "keys", tmp_path / "keyring.json"
    host_a = keys_generate(keys, "host-a", "/work/a", keyring)
    stranger = keys_generate(keys, "host-x", "/work/a", None)  # not in the keyring
    signed_a = ["--signing-key", str(host_a), "--key-id", "host-a"]
    async with (
        running_indexer(data, kafka, batch_ms=20),
        RawProducer(kafka_bootstrap) as producer,
    ):
        sessions = ((A, "alpha needle"), (B, "bravo needle"), (A2, "second needle"))
        await publish_texts(producer, topics, data, sessions)
        async with running_worker(data, kafka, unique_name("group"), keyring=keyring) as worker:
            await wait_assigned(worker, 2)

            answered = await call(topics, "hint-a", *signed_a, "--workspace", "/work/a")
            assert answered.returncode == 0, answered.stderr
            assert "hint-a2" in answered.stdout and "hint-b" not in answered.stdout, answered.stdout
            assert "likely cause" not in answered.stderr and "warning" not in answered.stderr

            unsigned = await call(topics, "hint-a", "--workspace", "/work/a")
            refused_with(unsigned, UNSIGNED)

            no_workspace = await call(topics, "hint-a", *signed_a)
            uncovered = (
                "no --workspace (the caller's cwd) given: key 'host-a' covers /work/a"
                " (its entry beside the key), which a caller without a cwd is not in"
            )
            lines = refused_with(no_workspace, "the warning above")
            assert f"sessionq call: warning: {uncovered}" in lines  # said once, before sending

            other = await call(topics, "hint-b", *signed_a, "--workspace", "/work/b")
            not_b = (
                "key 'host-a' covers /work/a (its entry beside the key), not the workspace /work/b"
            )
            lines = refused_with(other, "the warning above")
            assert f"sessionq call: warning: {not_b}" in lines
            assert sum(not_b in line for line in lines) == 1

            generic = (
                "the workers' keyring has no key {kid!r}, or it does not cover /work/a, or the"
                " caller's stored cwd is not /work/a (the workers' log names the reason)"
            )
            unknown_key = await call(
                topics, "hint-a", "--signing-key", str(stranger), "--key-id", "host-x",
                "--workspace", "/work/a",
            )  # fmt: skip
            lines = refused_with(unknown_key, generic.format(kid="host-x"))
            assert not any("warning" in line for line in lines), lines  # its entry covers it

            # A caller the key covers, claimed in a workspace that is not its stored cwd.
            elsewhere = await call(topics, "hint-b", *signed_a, "--workspace", "/work/a")
            refused_with(elsewhere, generic.format(kid="host-a"))

            # A caller the store does not know is no refusal: the worker waits for its
            # log to be indexed (read-your-writes) until the deadline; the timeout's
            # likely cause names the caller to check.
            ghost = await call(
                topics, "ghost", *signed_a, "--workspace", "/work/a", "--timeout-ms", "2000"
            )
            assert ghost.returncode != 0 and "TOOL_TIMEOUT" in ghost.stderr, ghost
            assert CALLER_UNAUTHENTICATED not in ghost.stderr
            hints = [line for line in ghost.stderr.splitlines() if "likely cause" in line]
            assert len(hints) == 1 and "'ghost'" in hints[0] and "published" in hints[0], hints


def test_the_hint_for_each_cause(tmp_path: Path) -> None:
    key = keys_generate(tmp_path, "host-a", "/work/a", None)
    signer = CallerSigner.from_file("host-a", key)
    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / "host-b.key").write_bytes(key.read_bytes())  # no entry beside it
    no_entry = CallerSigner.from_file("host-b", bare / "host-b.key")

    assert refusal_hint(None, "/work/a") == UNSIGNED
    assert caller_warnings(None, "/work/a") == []  # unsigned: no warning beforehand
    assert caller_warnings(signer, "/work/a") == []
    assert caller_warnings(signer, "/work/a/sub") == []
    assert caller_warnings(signer, "/work/ab") != []  # a prefix is a path, not a string
    assert refusal_hint(signer, "/work/b") == caller_warnings(signer, "/work/b")[0]
    assert "not an absolute path" in refusal_hint(signer, "work/a")
    assert "not an absolute path" in refusal_hint(signer, "/work/a/../b")
    assert refusal_hint(signer, None).startswith("no --workspace")
    # Without the key's entry nothing is known: the hint lists what the workers check.
    assert caller_warnings(no_entry, "/anything") == []
    assert refusal_hint(no_entry, None) == (
        "the workers' keyring has no key 'host-b', or it does not cover (no workspace), or"
        " the caller's stored cwd is not (no workspace) (the workers' log names the reason)"
    )
    assert json.loads((tmp_path / "host-a.entry.json").read_text())["kid"] == "host-a"
