"""Who may talk to the embedded HTTP API: the bearer token (``--token-file``) and the
loopback rule (beyond loopback, ``serve`` starts only with a token).

The token is read once at start and never printed: errors name the file, not its text.
"""

from __future__ import annotations

import hmac
import ipaddress
from pathlib import Path

# Probes a load balancer or orchestrator must reach without credentials.
OPEN_PATHS = frozenset({"/healthz", "/readyz"})


class TokenFileError(ValueError):
    """The token file cannot serve as a token (unreadable or empty); names the file only."""


def load_token(path: Path) -> str:
    """The file's text, stripped of surrounding whitespace (so a file written with
    Windows line endings, ``token\\r\\n``, holds ``token``); an unreadable or empty file
    is a ``TokenFileError``."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
        raise TokenFileError(f"cannot read the token file {str(path)!r}: {reason}") from None
    token = text.strip()
    if not token:
        raise TokenFileError(f"the token file {str(path)!r} is empty")
    return token


def is_loopback(host: str) -> bool:
    """``localhost``, 127.0.0.0/8 and ::1; any other name or address is not."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def token_matches(given: str | None, token: str) -> bool:
    """Constant-time comparison of a presented token with the expected one, as bytes.
    A header decoded with ``surrogateescape`` keeps its non-UTF-8 bytes as lone surrogates, which
    ``surrogatepass`` encodes (so they mismatch) instead of raising."""
    if given is None:
        return False
    return hmac.compare_digest(given.encode("utf-8", "surrogatepass"), token.encode("utf-8"))


def bearer(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header, else None."""
    if authorization is None:
        return None
    scheme, _, value = authorization.strip().partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        return None
    return value.strip()
