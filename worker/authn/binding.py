"""What a caller token is bound to: the whole envelope it travels in (claim ``req``).

``req`` is ``base64url(SHA-256(JCS(envelope without caller.token)))``, unpadded: the
record value as the host sends it — ``v``, ``kind``, ``id``, ``reply_to``, ``tool``,
``arguments``, ``timeout_ms``, ``caller`` (``session_id``, ``step_seq``, ``min_seq``) for
a request; ``v``, ``kind``, ``id``, ``reason``, ``caller`` for a cancel — with the one
member ``caller.token`` removed, every other member kept exactly as sent (a member that
is absent stays absent; ``null`` stays ``null``). JCS is the JSON Canonicalization
Scheme of RFC 8785: object members sorted by their UTF-16 code units, no whitespace,
strings as UTF-8 with only the mandatory escapes, numbers in ECMAScript's shortest
round-trip form (``1.0`` is ``1``, ``1e21`` is ``1e+21``). An envelope JCS cannot encode
(an integer beyond ±(2^53 − 1), a non-finite number) has no binding: no token vouches
for it.

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

CLAIM: Final = "req"
_UNSET: Final = object()


def envelope_digest(envelope: Mapping[str, Any]) -> str | None:
    """The ``req`` claim of an envelope given as JSON values (``caller.token``, if
    present, is left out); None when JCS cannot encode it."""
    body = dict(envelope)
    caller = body.get("caller")
    if isinstance(caller, Mapping) and "token" in caller:
        body["caller"] = {k: v for k, v in caller.items() if k != "token"}
    try:
        canonical = rfc8785.dumps(body)
    except (rfc8785.CanonicalizationError, TypeError, ValueError):
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
