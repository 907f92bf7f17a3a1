"""Caller tokens: a JWT (RFC 7519) signed by the host with Ed25519, checked by the worker.

Claims: ``rid`` the request id, ``sub`` the caller session id, ``ws`` the caller's
workspace (its cwd; ``null`` for a caller without one), ``req`` the digest of the whole
envelope the token travels in (``worker.authn.binding``: tool, arguments, ``reply_to``,
``timeout_ms``, caller fields), ``iat``/``exp`` a short lifetime (at most
``MAX_LIFETIME_S``). So a captured token answers nothing but the identical request, to
the identical reply topic, until it expires. The header names the host key (``kid``); only
``EdDSA`` is accepted, so no ``alg`` confusion (``none``, HMAC with a public key) can
pass. Every rejection is the same closed error (``SESSION_QUERY_CALLER_UNAUTHENTICATED``,
one fixed message naming no session); the reason goes to the log, the token never.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any, Final

import jwt
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    NoEncryption,
    PrivateFormat,
    PublicFormat,
    load_pem_private_key,
)

from worker.authn.binding import CLAIM as BINDING_CLAIM
from worker.authn.binding import Binding, envelope_digest
from worker.authn.keyring import HostKey, Keyring, KeyringError, file_problem, read_entry
from worker.authn.principal import Principal
from worker.contract.errors import HarnessError, caller_unauthenticated

log = logging.getLogger("sessionq.authn")
ALGORITHM: Final = "EdDSA"
DEFAULT_TTL_S: Final = 60
MAX_LIFETIME_S: Final = 300
LEEWAY_S: Final = 5


def generate_key_pair() -> tuple[str, str]:
    """A new Ed25519 key pair as (private PKCS#8 PEM, public SubjectPublicKeyInfo PEM)."""
    key = Ed25519PrivateKey.generate()
    private = key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()).decode()
    public = key.public_key().public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo)
    return private, public.decode()


class CallerSigner:
    """The host side: signs one token per request (``worker.host.client`` uses it)."""

    def __init__(
        self,
        kid: str,
        private_key: Ed25519PrivateKey,
        *,
        ttl_s: int = DEFAULT_TTL_S,
        entry: HostKey | None = None,
    ):
        """``entry``: the key's own keyring entry when known (advice for the host's
        user, ``worker.host.preflight``; the workers' keyring decides)."""
        if not 1 <= ttl_s <= MAX_LIFETIME_S:
            raise ValueError(f"token lifetime must be 1..{MAX_LIFETIME_S} s, got {ttl_s}")
        self.kid = kid
        self._key = private_key
        self.ttl_s = ttl_s
        self.entry = entry

    @classmethod
    def from_file(cls, kid: str, path: Path, *, ttl_s: int = DEFAULT_TTL_S) -> CallerSigner:
        """A signer from a private key PEM file (``sessionq keys generate`` writes one,
        and its keyring entry beside it, read here when present)."""
        try:
            raw = path.read_bytes()
        except OSError as exc:
            raise KeyringError("signing key", path, file_problem(exc)) from exc
        try:
            key = load_pem_private_key(raw, password=None)
        except (ValueError, TypeError) as exc:  # TypeError: a key that wants a password
            problem = "not a PEM private key without a password"
            raise KeyringError("signing key", path, problem) from exc
        if not isinstance(key, Ed25519PrivateKey):
            raise KeyringError("signing key", path, "not an Ed25519 private key")
        return cls(kid, key, ttl_s=ttl_s, entry=read_entry(path))

    def token(self, request_id: str, session_id: str, workspace: str | None, binding: str) -> str:
        """A token for one envelope: ``binding`` is its ``req`` claim (``envelope_digest``)."""
        now = int(time.time())
        claims: dict[str, Any] = {
            "rid": request_id,
            "sub": session_id,
            "ws": workspace,
            BINDING_CLAIM: binding,
            "iat": now,
            "exp": now + self.ttl_s,
        }
        return jwt.encode(claims, self._key, algorithm=ALGORITHM, headers={"kid": self.kid})

    def sign(self, envelope: dict[str, Any], workspace: str | None) -> str:
        """The token for a request or cancel envelope (a dict of JSON values, without
        ``caller.token``) whose ``caller.session_id`` lives in ``workspace``. Raises
        ``ValueError`` for an envelope no token can bind (``envelope_digest``)."""
        binding = envelope_digest(envelope)
        if binding is None:
            raise ValueError(
                "the request cannot be signed: JSON numbers must be finite and integers"
                " within ±(2^53 - 1)"
            )
        return self.token(envelope["id"], envelope["caller"]["session_id"], workspace, binding)


class CallerAuthenticator:
    """The worker side: a token for this request and caller, from a host key that may
    speak for the claimed workspace, or ``SESSION_QUERY_CALLER_UNAUTHENTICATED``."""

    def __init__(self, keyring: Keyring) -> None:
        self.keyring = keyring

    def _reject(self, reason: str) -> HarnessError:
        log.info("caller not authenticated: %s", reason)
        return caller_unauthenticated()

    def verify(
        self, token: object, request_id: str, session_id: str | None, binding: Binding | None
    ) -> Principal:
        """The principal of a token for this request id, caller and envelope
        (``binding``; None: an envelope without one, which no token vouches for)."""
        if not isinstance(token, str) or not token:
            raise self._reject("no token")
        if session_id is None:
            raise self._reject("no caller session")
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError as exc:
            raise self._reject(f"unreadable token header: {type(exc).__name__}") from None
        kid = header.get("kid")
        if header.get("alg") != ALGORITHM or not isinstance(kid, str):
            raise self._reject("token is not an EdDSA token naming its key")
        key = self.keyring.get(kid)
        if key is None:
            raise self._reject(f"unknown host key {kid!r}")
        try:
            claims = jwt.decode(
                token,
                key.public_key,
                algorithms=[ALGORITHM],
                leeway=LEEWAY_S,
                options={"require": ["exp", "iat", "rid", "sub", BINDING_CLAIM]},
            )
        except jwt.PyJWTError as exc:
            raise self._reject(f"token rejected: {type(exc).__name__}") from None
        workspace = claims.get("ws")
        if claims.get("rid") != request_id:
            raise self._reject("token is for another request")
        if claims.get("sub") != session_id:
            raise self._reject("token is for another caller")
        lifetime = claims["exp"] - claims["iat"]
        if not isinstance(lifetime, int) or not 0 < lifetime <= MAX_LIFETIME_S:
            raise self._reject(f"token lifetime must be 1..{MAX_LIFETIME_S} s")
        if workspace is not None and not isinstance(workspace, str):
            raise self._reject("token workspace is not a string")
        if not key.covers(workspace):
            raise self._reject(f"host key {kid!r} may not speak for that workspace")
        # last: the digest of a large envelope is the one costly check
        digest = binding.digest if binding is not None else None
        if digest is None or claims.get(BINDING_CLAIM) != digest:
            raise self._reject("token is for another request body (tool, arguments, reply_to)")
        return Principal(kid, session_id, workspace)
