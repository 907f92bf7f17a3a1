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
from tests.worker.conftest import HarnessFactory
from worker.authn import keyring as keyring_module
from worker.authn.keyring import Keyring, KeyringError, keyring_entry
from worker.authn.tokens import (
    MAX_LIFETIME_S,
    CallerAuthenticator,
    CallerSigner,
    generate_key_pair,
)
from worker.contract.errors import CALLER_UNAUTHENTICATED, UNAUTHENTICATED_MESSAGE, HarnessError
from worker.pipeline import Pipeline, ToolCall

WS = "/home/dev/app"


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
    principal = auth.verify(signer_a.token("r1", "s1", WS), "r1", "s1")
    assert (principal.kid, principal.session_id, principal.workspace) == ("host-a", "s1", WS)


def test_missing_forged_and_mismatched_tokens_are_refused(setup: Any, tmp_path: Path) -> None:
    auth, signer_a, signer_b = setup
    good = signer_a.token("r1", "s1", WS)
    refused(lambda: auth.verify(None, "r1", "s1"))
    refused(lambda: auth.verify("", "r1", "s1"))
    refused(lambda: auth.verify("not.a.jwt", "r1", "s1"))
    refused(lambda: auth.verify(good, "r2", "s1"))  # replayed onto another request
    refused(lambda: auth.verify(good, "r1", "s2"))  # another caller
    refused(lambda: auth.verify(good, "r1", None))
    refused(lambda: auth.verify(signer_b.token("r1", "s1", WS), "r1", "s1"))  # foreign ws
    stranger, _ = host(tmp_path, "host-a", ["*"])  # same kid, key not in the keyring
    refused(lambda: auth.verify(stranger.token("r1", "s1", WS), "r1", "s1"))
    head, _, sig = good.split(".")
    tampered = jwt.utils.base64url_encode(
        json.dumps({**jwt.decode(good, options={"verify_signature": False}), "ws": "/srv"})
        .encode()
    ).decode()
    refused(lambda: auth.verify(f"{head}.{tampered}.{sig}", "r1", "s1"))
    refused(lambda: auth.verify(signer_a.token("r1", "s1", None), "r1", "s1"))  # no-cwd caller


def test_expired_too_long_and_algorithm_confused_tokens_are_refused(setup: Any) -> None:
    auth, signer_a, _ = setup
    key: Ed25519PrivateKey = signer_a._key
    now = int(time.time())
    base = {"rid": "r1", "sub": "s1", "ws": WS}
    expired = jwt.encode({**base, "iat": now - 120, "exp": now - 60}, key, algorithm="EdDSA",
                         headers={"kid": "host-a"})
    refused(lambda: auth.verify(expired, "r1", "s1"))
    too_long = jwt.encode({**base, "iat": now, "exp": now + MAX_LIFETIME_S + 1}, key,
                          algorithm="EdDSA", headers={"kid": "host-a"})
    refused(lambda: auth.verify(too_long, "r1", "s1"))
    no_exp = jwt.encode({**base, "iat": now}, key, algorithm="EdDSA", headers={"kid": "host-a"})
    refused(lambda: auth.verify(no_exp, "r1", "s1"))
    unsigned = jwt.encode({**base, "iat": now, "exp": now + 60}, None, algorithm="none",
                          headers={"kid": "host-a"})
    refused(lambda: auth.verify(unsigned, "r1", "s1"))
    hmac = jwt.encode({**base, "iat": now, "exp": now + 60}, "s" * 32, algorithm="HS256",
                      headers={"kid": "host-a"})
    refused(lambda: auth.verify(hmac, "r1", "s1"))


def test_workspace_prefixes_stop_at_path_boundaries(tmp_path: Path) -> None:
    signer, entry = host(tmp_path, "h", ["/srv/app"])
    auth = CallerAuthenticator(Keyring(write_keyring(tmp_path / "k.json", entry)))
    assert auth.verify(signer.token("r", "s", "/srv/app"), "r", "s").workspace == "/srv/app"
    assert auth.verify(signer.token("r", "s", "/srv/app/x"), "r", "s").workspace == "/srv/app/x"
    refused(lambda: auth.verify(signer.token("r", "s", "/srv/apple"), "r", "s"))
    everything, entry_all = host(tmp_path, "all", ["*"])
    auth_all = CallerAuthenticator(Keyring(write_keyring(tmp_path / "k2.json", entry_all)))
    assert auth_all.verify(everything.token("r", "s", None), "r", "s").workspace is None


def test_the_keyring_is_reloaded_when_it_changes_and_a_bad_file_keeps_the_old_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(keyring_module, "RELOAD_CHECK_S", 0.0)
    signer_a, entry_a = host(tmp_path, "a", ["*"])
    signer_b, entry_b = host(tmp_path, "b", ["*"])
    path = write_keyring(tmp_path / "k.json", entry_a)
    auth = CallerAuthenticator(Keyring(path))
    auth.verify(signer_a.token("r", "s", WS), "r", "s")
    refused(lambda: auth.verify(signer_b.token("r", "s", WS), "r", "s"))
    write_keyring(path, entry_b)  # key rotation: a replaced, b added
    os.utime(path, ns=(time.time_ns(), time.time_ns() + 1_000_000))
    auth.verify(signer_b.token("r", "s", WS), "r", "s")
    refused(lambda: auth.verify(signer_a.token("r", "s", WS), "r", "s"))
    path.write_text("{broken")
    auth.verify(signer_b.token("r", "s", WS), "r", "s")  # the last good keyring stands


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

    async def call(token: str | None, rid: str = "r1") -> Any:
        return await pipeline.answer(
            ToolCall(rid, "session_search", {"query": "needle"}, h.caller, token=token)
        )

    h.spy.calls.clear()
    for bad in (None, signer.token("r2", "caller", caller_cwd)):
        reply = await call(bad)
        assert reply.error is not None and reply.error.code == CALLER_UNAUTHENTICATED
        assert reply.text == f"Error: {UNAUTHENTICATED_MESSAGE}"  # names no session
    assert h.spy.calls == []  # refused before anything was read
    reply = await call(signer.token("r1", "caller", "/work/elsewhere"))  # not its stored cwd
    assert reply.error is not None and reply.error.code == CALLER_UNAUTHENTICATED
    reply = await call(signer.token("r1", "caller", caller_cwd))
    assert reply.error is None, reply.text
    assert "other" in reply.text
