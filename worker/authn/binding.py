"""What a caller token is bound to: the whole envelope it travels in (claim ``req``).

``req`` is ``base64url(SHA-256(JCS(envelope without caller.token)))``, unpadded: the
record value as the host sends it — ``v``, ``kind``, ``id``, ``reply_to``, ``tool``,
``arguments``, ``timeout_ms``, ``caller`` (``session_id``, ``step_seq``, ``min_seq``) for
a request; ``v``, ``kind``, ``id``, ``reason``, ``caller`` for a cancel — with the one
member ``caller.token`` removed, every other member kept exactly as sent (a member that
is absent stays absent; ``null`` stays ``null``). JCS is the JSON Canonicalization
Scheme of RFC 8785: object members sorted by their UTF-16 code units, no whitespace,
strings as UTF-8 with only the mandatory escapes, numbers in ECMAScript's shortest
round-trip form (``1.0`` is ``1``, ``1e21`` is ``1e+21``). A lone UTF-16 surrogate (a
JavaScript string cut mid-emoji) is written as JavaScript's JCS writes it, the lowercase
escape ``\\udxxx`` of ``JSON.stringify`` (``canonical_json``). An envelope JCS cannot
encode (an integer beyond ±(2^53 − 1), a non-finite number) has no binding: no token
vouches for it.

The worker computes the digest of the envelope it decoded, on first use only: a token
that fails its signature check never costs the encoding of a large request.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Mapping
from typing import Any, Final

import rfc8785
from pydantic import BaseModel

from worker.contract.jsjson import js_quote

CLAIM: Final = "req"
_UNSET: Final = object()


def canonical_json(value: Any) -> bytes:
    """JCS (RFC 8785) of ``value`` as JavaScript's JCS writes it; raises
    ``rfc8785.CanonicalizationError`` for what JCS cannot encode.

    ``rfc8785`` writes every value but one holding a lone surrogate, which it refuses
    (RFC 8785 asks for I-JSON, which has none). A JavaScript host holds such strings, and
    its JCS (``JSON.stringify`` of each string, object keys sorted by UTF-16 code units)
    writes each lone surrogate as its lowercase ``\\udxxx`` escape. A value ``rfc8785``
    refuses is therefore written again that way: strings by ``js_quote`` (well-formed
    ``JSON.stringify`` quoting, a pair held as two code points being its character),
    keys in ``rfc8785``'s order, any other value by ``rfc8785``, so its refusals stand.
    """
    try:
        return rfc8785.dumps(value)
    except (rfc8785.CanonicalizationError, UnicodeEncodeError):  # in a value; in a key
        return _as_javascript(value)


def _as_javascript(value: Any) -> bytes:
    if isinstance(value, str):
        return js_quote(value).encode()
    if isinstance(value, dict):
        if not all(isinstance(key, str) for key in value):
            raise rfc8785.CanonicalizationError("object keys must be strings")
        members = sorted(value.items(), key=lambda kv: kv[0].encode("utf-16-be", "surrogatepass"))
        return b"{%b}" % b",".join(
            js_quote(key).encode() + b":" + _as_javascript(member) for key, member in members
        )
    if isinstance(value, (list, tuple)):
        return b"[%b]" % b",".join(_as_javascript(item) for item in value)
    return rfc8785.dumps(value)


def envelope_digest(envelope: Mapping[str, Any]) -> str | None:
    """The ``req`` claim of an envelope given as JSON values (``caller.token``, if
    present, is left out); None when JCS cannot encode it."""
    body = dict(envelope)
    caller = body.get("caller")
    if isinstance(caller, Mapping) and "token" in caller:
        body["caller"] = {k: v for k, v in caller.items() if k != "token"}
    try:
        canonical = canonical_json(body)
    except (rfc8785.CanonicalizationError, TypeError, ValueError, RecursionError):
        return None
    digest = hashlib.sha256(canonical).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


class Binding:
    """The binding of one decoded envelope, computed on first use."""

    __slots__ = ("_digest", "_envelope")

    def __init__(self, envelope: BaseModel | Mapping[str, Any]) -> None:
        self._envelope = envelope
        self._digest: object = _UNSET

    @property
    def digest(self) -> str | None:
        if self._digest is _UNSET:
            envelope = self._envelope
            if isinstance(envelope, BaseModel):  # the members the host sent, as sent
                envelope = envelope.model_dump(exclude_unset=True)
            self._digest = envelope_digest(envelope)
        return self._digest  # type: ignore[return-value]
