"""The one admission rule of every HTTP port sessionq opens (``serve`` and its console,
``mcp --transport http``, every role's ops endpoints): who may be answered, decided
from the request's path and headers before its body is read.

* With a bearer token (``--token-file``), every path but the port's open ones needs
  ``Authorization: Bearer <token>`` (``token``); the console page ``/`` also takes
  ``?token=`` (a browser cannot send the header when the page is opened; the page moves
  it into sessionStorage and off the URL). Any ``Host`` is answered: the token is the
  defence.
* Without a token, a port that is the user's own loopback API answers only requests
  whose ``Host`` and ``Origin`` name an allowed name (``origin``: the DNS-rebinding
  rule). An ops port (``names`` None) answers anyone: it serves probes and metrics only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Final

from worker.webguard.origin import refusal
from worker.webguard.token import bearer, token_matches

UNAUTHENTICATED: Final = "UNAUTHENTICATED"
FORBIDDEN_HOST: Final = "FORBIDDEN_HOST"


@dataclass(frozen=True, slots=True)
class Refusal:
    """An unadmitted request's answer: status, error code, message, extra headers."""

    status: int
    code: str
    message: str
    headers: tuple[tuple[str, str], ...] = ()


def _never(_: str) -> bool:
    return False


@dataclass(frozen=True, slots=True)
class Admission:
    """A port's rule (module docstring). ``is_open(path)``: answered without a token
    (probes, the console's static files); ``token_in_query``: the paths that take
    ``?token=``."""

    token: str | None = field(repr=False)
    names: frozenset[str] | None
    is_open: Callable[[str], bool] = _never
    token_in_query: frozenset[str] = field(default_factory=frozenset)

    def admit(
        self, path: str, headers: Mapping[str, str], query_token: str | None = None
    ) -> Refusal | None:
        """None when the request may be answered, else its refusal. ``headers`` are
        keyed by lower-case name."""
        token = self.token
        if token is None:
            if self.names is None:
                return None
            refused = refusal(headers.get("host"), headers.get("origin"), self.names)
            return None if refused is None else Refusal(refused[0], FORBIDDEN_HOST, refused[1])
        if self.is_open(path) or token_matches(bearer(headers.get("authorization")), token):
            return None
        if path in self.token_in_query and token_matches(query_token, token):
            return None
        return Refusal(
            401,
            UNAUTHENTICATED,
            "a valid bearer token is required",
            (("www-authenticate", "Bearer"),),
        )


OPEN_PORT: Final = Admission(token=None, names=None)
"""An ops port: probes and metrics for anyone who reaches it."""
