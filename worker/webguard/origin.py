"""The DNS-rebinding rule of the loopback HTTP surfaces (``sessionq serve`` and ``sessionq
mcp --transport http`` without a bearer token).

A web page can rebind its own name to 127.0.0.1 and have the browser read whatever
answers there; what it cannot change is the name in the ``Host`` header (its own) and
the ``Origin`` of its scripts. So without a token every request must name, in ``Host``
(any port), one of the allowed names — ``localhost``, ``127.0.0.1``, ``::1``, the listen
address and the configured extra names (``--allowed-hosts``) — else ``421``; and an
``Origin``, when sent, must be ``http(s)://`` one of them, else ``403``. Names compare
case-insensitively. With a token the token is the defence (a rebinding page cannot know
it), and any name is answered.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Final
from urllib.parse import urlsplit

LOCAL_NAMES: Final = ("localhost", "127.0.0.1", "::1")


def allowed_names(listen_host: str, extra: Collection[str] = ()) -> frozenset[str]:
    """The names a request may use: the local ones, the listen host, ``extra``."""
    names = {*LOCAL_NAMES, listen_host.strip("[]"), *extra}
    return frozenset(n.lower() for n in names if n)


def _host_name(value: str) -> str:
    """The name of a ``Host`` header value (``[::1]:8765`` is ``::1``), lower case."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1 : value.find("]")] if "]" in value else value
    return value.rpartition(":")[0] if value.count(":") == 1 else value


def refusal(host: str | None, origin: str | None, names: frozenset[str]) -> tuple[int, str] | None:
    """``(status, message)`` for a request whose ``Host`` or ``Origin`` names no allowed
    name (module docstring); None when it may be answered."""
    if not host or _host_name(host) not in names:
        return 421, "the Host header names no address this server answers on"
    if origin is not None and _origin_name(origin) not in names:
        return 403, "the Origin of this request may not call this server"
    return None


def _origin_name(origin: str) -> str | None:
    """The host name of an ``http(s)://`` ``Origin``; None for any other or a malformed
    one (``http://[::1`` makes ``urlsplit`` raise)."""
    try:
        parts = urlsplit(origin.strip())
        return parts.hostname if parts.scheme in ("http", "https") else None
    except ValueError:
        return None
