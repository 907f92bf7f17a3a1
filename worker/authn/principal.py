"""Who a verified request speaks for (``Principal``): the host key that signed its caller
token and the caller session and workspace the key vouched for.

Kept apart from the token checks (``worker.authn.tokens``: JWT and Ed25519 underneath) so
the code that only compares principals (cancels, admission shares) loads no cryptography.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Principal:
    """Who a verified request speaks for: the host key and the caller it vouched for."""

    kid: str
    session_id: str
    workspace: str | None
