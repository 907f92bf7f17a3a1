"""Authenticated callers (issue 9): a request's caller token must be signed by a host key
of the keyring, for this request and this caller, in a workspace that key may speak for,
and the caller's stored workspace must be the one the token names. Every refusal is the
same closed error, names no session, and happens before anything is read."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from tests.builders import header, user
from tests.fixtures.tools import HarnessFactory
from worker.authn import keyring as keyring_module
from worker.authn.binding import Binding, envelope_digest
from worker.authn.keyring import Keyring, KeyringError, keyring_entry
from worker.authn.tokens import (
    MAX_LIFETIME_S,
    CallerAuthenticator,
    CallerSigner,
    generate_key_pair,
)
from worker.calls.pipeline import Pipeline
from worker.calls.tool_call import ToolCall
from worker.contract.errors import CALLER_UNAUTHENTICATED, UNAUTHENTICATED_MESSAGE, HarnessError

WS = "/home/dev/app"


def envelope(rid: str, sid: str | None, **members: Any) -> dict[str, Any]:
    """A request envelope without its token (the members a token binds)."""
    caller = {"session_id": sid} if sid is not None else {}
    return {
        "v": 1, "kind": "request", "id": rid, "reply_to": "sessionq.replies",
        "tool": "session_search", "arguments": {"query": "q"}, "caller": caller, **members,
    }


def token(signer: CallerSigner, rid: str, sid: str, ws: str | None) -> str:
    """A token for the standard envelope of ``rid`` and ``sid``."""
    return signer.token(rid, sid, ws, envelope_digest(envelope(rid, sid)) or "")


def verify(auth: CallerAuthenticator, tok: Any, rid: str, sid: str | None) -> Any:
    return auth.verify(tok, rid, sid, Binding(envelope(rid, sid)))


def write_keyring(path: Path, *entries: dict[str, Any]) -> Path:
    path.write_text(json.dumps({"keys": list(entries)}))
    return path


def host(tmp_path: Path, kid: str, workspaces: list[str]) -> tuple[CallerSigner, dict[str, Any]]:
    private, public = generate_key_pair()
    key_file = tmp_path / f"{kid}.key"
    key_file.write_text(private)
    return CallerSigner.from_file(kid, key_file), keyring_entry(kid, public, workspaces)


@pytest.fixture
def setup(tmp_path: Path) -> tuple[CallerAuthenticator, CallerSigner, CallerSigner]:
    """A keyring with host-a (may speak for /home/dev) and host-b (for /srv only)."""
    signer_a, entry_a = host(tmp_path, "host-a", ["/home/dev"])
    signer_b, entry_b = host(tmp_path, "host-b", ["/srv"])
    ring = Keyring(write_keyring(tmp_path / "keyring.json", entry_a, entry_b))
    return CallerAuthenticator(ring), signer_a, signer_b


def refused(fn: Any) -> None:
    with pytest.raises(HarnessError) as err:
        fn()
    assert (err.value.code, err.value.message) == (CALLER_UNAUTHENTICATED, UNAUTHENTICATED_MESSAGE)


def test_a_valid_token_yields_its_principal(setup: Any) -> None:
    auth, signer_a, _ = setup
    principal = verify(auth, token(signer_a, "r1", "s1", WS), "r1", "s1")
    assert (principal.kid, principal.session_id, principal.workspace) == ("host-a", "s1", WS)


def test_missing_forged_and_mismatched_tokens_are_refused(setup: Any, tmp_path: Path) -> None:
    auth, signer_a, signer_b = setup
    good = token(signer_a, "r1", "s1", WS)
    refused(lambda: verify(auth, None, "r1", "s1"))
    refused(lambda: verify(auth, "", "r1", "s1"))
    refused(lambda: verify(auth, "not.a.jwt", "r1", "s1"))
    refused(lambda: verify(auth, good, "r2", "s1"))  # replayed onto another request
    refused(lambda: verify(auth, good, "r1", "s2"))  # another caller
    refused(lambda: verify(auth, good, "r1", None))
    refused(lambda: verify(auth, token(signer_b, "r1", "s1", WS), "r1", "s1"))  # foreign ws
    stranger, _ = host(tmp_path, "host-a", ["*"])  # same kid, key not in the keyring
    refused(lambda: verify(auth, token(stranger, "r1", "s1", WS), "r1", "s1"))
    head, _, sig = good.split(".")
    tampered = jwt.utils.base64url_encode(
        json.dumps({**jwt.decode(good, options={"verify_signature": False}), "ws": "/srv"})
        .encode()
    ).decode()
    refused(lambda: verify(auth, f"{head}.{tampered}.{sig}", "r1", "s1"))
    refused(lambda: verify(auth, token(signer_a, "r1", "s1", None), "r1", "s1"))  # no-cwd caller


def test_expired_too_long_and_algorithm_confused_tokens_are_refused(setup: Any) -> None:
    auth, signer_a, _ = setup
    key: Ed25519PrivateKey = signer_a._key
    now = int(time.time())
    base = {"rid": "r1", "sub": "s1", "ws": WS, "req": envelope_digest(envelope("r1", "s1"))}
    expired = jwt.encode({**base, "iat": now - 120, "exp": now - 60}, key, algorithm="EdDSA",
                         headers={"kid": "host-a"})
    refused(lambda: verify(auth, expired, "r1", "s1"))
    too_long = jwt.encode({**base, "iat": now, "exp": now + MAX_LIFETIME_S + 1}, key,
                          algorithm="EdDSA", headers={"kid": "host-a"})
    refused(lambda: verify(auth, too_long, "r1", "s1"))
    no_exp = jwt.encode({**base, "iat": now}, key, algorithm="EdDSA", headers={"kid": "host-a"})
    refused(lambda: verify(auth, no_exp, "r1", "s1"))
    unsigned = jwt.encode({**base, "iat": now, "exp": now + 60}, None, algorithm="none",
                          headers={"kid": "host-a"})
    refused(lambda: verify(auth, unsigned, "r1", "s1"))
    hmac = jwt.encode({**base, "iat": now, "exp": now + 60}, "s" * 32, algorithm="HS256",
                      headers={"kid": "host-a"})
    refused(lambda: verify(auth, hmac, "r1", "s1"))


def test_workspace_prefixes_stop_at_path_boundaries(tmp_path: Path) -> None:
    signer, entry = host(tmp_path, "h", ["/srv/app"])
    auth = CallerAuthenticator(Keyring(write_keyring(tmp_path / "k.json", entry)))
    assert verify(auth, token(signer, "r", "s", "/srv/app"), "r", "s").workspace == "/srv/app"
    assert verify(auth, token(signer, "r", "s", "/srv/app/x"), "r", "s").workspace == "/srv/app/x"
    refused(lambda: verify(auth, token(signer, "r", "s", "/srv/apple"), "r", "s"))
    everything, entry_all = host(tmp_path, "all", ["*"])
    auth_all = CallerAuthenticator(Keyring(write_keyring(tmp_path / "k2.json", entry_all)))
    assert verify(auth_all, token(everything, "r", "s", None), "r", "s").workspace is None


def test_the_keyring_is_reloaded_when_it_changes_and_a_bad_file_keeps_the_old_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(keyring_module, "RELOAD_CHECK_S", 0.0)
    signer_a, entry_a = host(tmp_path, "a", ["*"])
    signer_b, entry_b = host(tmp_path, "b", ["*"])
    path = write_keyring(tmp_path / "k.json", entry_a)
    auth = CallerAuthenticator(Keyring(path))
    verify(auth, token(signer_a, "r", "s", WS), "r", "s")
    refused(lambda: verify(auth, token(signer_b, "r", "s", WS), "r", "s"))
    write_keyring(path, entry_b)  # key rotation: a replaced, b added
    os.utime(path, ns=(time.time_ns(), time.time_ns() + 1_000_000))
    verify(auth, token(signer_b, "r", "s", WS), "r", "s")
    refused(lambda: verify(auth, token(signer_a, "r", "s", WS), "r", "s"))
    path.write_text("{broken")
    verify(auth, token(signer_b, "r", "s", WS), "r", "s")  # the last good keyring stands


@pytest.mark.parametrize(
    ("content", "complaint"),
    [
        ("{broken", "keyring"),
        ('{"keys": {}}', '{"keys": [...]}'),
        ('{"keys": [{"kid": "a", "public_key": "x", "workspaces": ["/w"]}]}', "keys[0]"),
        ('{"keys": [{"kid": "a", "public_key": "x", "workspaces": []}]}', "workspaces"),
    ],
)
def test_an_unusable_keyring_is_a_clear_start_error(
    tmp_path: Path, content: str, complaint: str
) -> None:
    path = tmp_path / "k.json"
    path.write_text(content)
    with pytest.raises(KeyringError) as err:
        Keyring(path)
    assert str(path) in err.value.message and complaint in err.value.message
    with pytest.raises(KeyringError, match=r"k-missing\.json"):
        Keyring(tmp_path / "k-missing.json")


async def test_the_pipeline_refuses_before_reading_and_checks_the_stored_workspace(
    make_harness: HarnessFactory, tmp_path: Path
) -> None:
    h = make_harness([(header("other", cwd="/work"), [user(0, "needle")])])
    caller_cwd = h.spy.real.get_session("caller").header.cwd
    assert caller_cwd == "/work"
    signer, entry = host(tmp_path, "h", ["/work"])
    auth = CallerAuthenticator(Keyring(write_keyring(tmp_path / "k.json", entry)))
    pipeline = Pipeline(h.spy, authenticator=auth)  # type: ignore[arg-type]

    def signed(rid: str, ws: str) -> str:
        request = {**envelope(rid, "caller"), "arguments": {"query": "needle"}}
        return signer.sign(request, ws)

    async def call(tok: str | None, rid: str = "r1") -> Any:
        request = {**envelope(rid, "caller"), "arguments": {"query": "needle"}}
        return await pipeline.answer(
            ToolCall(rid, "session_search", {"query": "needle"}, h.caller, token=tok,
                     binding=Binding(request))
        )

    h.spy.calls.clear()
    for bad in (None, signed("r2", caller_cwd)):
        reply = await call(bad)
        assert reply.error is not None and reply.error.code == CALLER_UNAUTHENTICATED
        assert reply.text == f"Error: {UNAUTHENTICATED_MESSAGE}"  # names no session
    assert h.spy.calls == []  # refused before anything was read
    reply = await call(signed("r1", "/work/elsewhere"))  # not its stored cwd
    assert reply.error is not None and reply.error.code == CALLER_UNAUTHENTICATED
    reply = await call(signed("r1", caller_cwd))
    assert reply.error is None, reply.text
    assert "other" in reply.text


def test_a_token_answers_only_the_identical_request(setup: Any) -> None:
    """The token binds the whole envelope: a captured token re-sent with another tool,
    query, reply topic, deadline or caller field is refused; the identical request
    (a re-delivery) is accepted, however its JSON was spelled."""
    auth, signer_a, _ = setup
    sent = envelope("r1", "s1", timeout_ms=30000)
    sent["caller"] = {"session_id": "s1", "step_seq": 2, "min_seq": 3}
    stolen = signer_a.sign(sent, WS)

    def tampered(**changes: Any) -> dict[str, Any]:
        return {**sent, **changes}

    for changed in (
        tampered(tool="session_event_search"),
        tampered(arguments={"query": "the thief's query"}),
        tampered(reply_to="sessionq.replies.thief"),
        tampered(timeout_ms=60000),
        {k: v for k, v in sent.items() if k != "timeout_ms"},
        tampered(caller={"session_id": "s1", "step_seq": 1, "min_seq": 3}),
        tampered(caller={"session_id": "s1", "step_seq": 2}),
        tampered(kind="cancel"),
    ):
        refused(lambda c=changed: auth.verify(stolen, "r1", "s1", Binding(c)))  # type: ignore[misc]
    refused(lambda: auth.verify(stolen, "r1", "s1", None))
    respelled = json.loads(json.dumps(dict(reversed(list(sent.items())))))  # other key order
    principal = auth.verify(stolen, "r1", "s1", Binding(respelled))
    assert (principal.kid, principal.workspace) == ("host-a", WS)


def test_the_envelope_digest_test_vector() -> None:
    """The vector of docs/host-integration.md ("Caller tokens"): key order, a float
    written 1.0, a non-ASCII and a non-BMP string, the token left out."""
    request = json.loads(
        '{"v": 1, "kind": "request", "id": "a6b1f0de-2f49-4f3e-8d7c-6f1b2c3d4e5f",'
        ' "reply_to": "sessionq.replies", "tool": "session_search",'
        ' "arguments": {"query": "caf\\u00e9 \\ud83d\\ude00", "limit": 10, "x": 1.0},'
        ' "caller": {"token": "ignored", "session_id": "3f0c6a52", "step_seq": 2},'
        ' "timeout_ms": 30000}'
    )
    import rfc8785

    canonical = rfc8785.dumps({**request, "caller": {"session_id": "3f0c6a52", "step_seq": 2}})
    assert canonical == (
        '{"arguments":{"limit":10,"query":"café 😀","x":1},"caller":{"session_id":"3f0c6a52",'
        '"step_seq":2},"id":"a6b1f0de-2f49-4f3e-8d7c-6f1b2c3d4e5f","kind":"request",'
        '"reply_to":"sessionq.replies","timeout_ms":30000,"tool":"session_search","v":1}'
    ).encode()
    assert envelope_digest(request) == "wYS46EXaQJiHbLk4pIa8Ipbu_JnOJ5Bpbf_v5O32VF0"
    assert envelope_digest({**request, "arguments": {"n": 2**53}}) is None  # not I-JSON


@pytest.mark.parametrize(
    "claim",
    ["/home/dev/../other", "/home/dev/./x", "/home/dev//x", "/home/dev/", "home/dev", "/home/devx"],
)
def test_workspace_claims_are_matched_on_clean_path_segments(setup: Any, claim: str) -> None:
    auth, signer_a, _ = setup  # host-a may speak for /home/dev
    refused(lambda: verify(auth, token(signer_a, "r1", "s1", claim), "r1", "s1"))
    assert verify(auth, token(signer_a, "r1", "s1", "/home/dev/x"), "r1", "s1").workspace


@pytest.mark.parametrize("prefix", ["/home/../etc", "home", "/a//b", "/a/./b", ""])
def test_a_keyring_prefix_must_be_a_clean_absolute_path(tmp_path: Path, prefix: str) -> None:
    _, entry = host(tmp_path, "h", [prefix])
    with pytest.raises(KeyringError, match="workspaces"):
        Keyring(write_keyring(tmp_path / "k.json", entry))
