"""The console page of ``sessionq serve``: ``/`` and its static files under ``/console/``.

The page is static: it shows what the API answers and holds no data itself. Its files
are the package's own (``worker/transports/http/console``), served from a fixed table, so no part
of a request path reaches the file system. Every response carries a
Content-Security-Policy that lets scripts, styles and requests come from this origin
only (no inline script, no external resource): text from session logs that ever reached
the DOM as markup could still not run — and the page never parses it as markup, it
builds DOM nodes with ``textContent`` (a message's Markdown arrives as a tree of
allowlisted tags, ``worker.reader.markdown``, built node by node).

``/`` follows the API's token rule (``worker.transports.http.api``); the files under ``/console/``
are open like the probes: a browser fetches them without the page's bearer token, and
they are the same public files in every installation.
"""

from __future__ import annotations

import functools
from importlib import resources
from typing import Final

from starlette.requests import Request
from starlette.responses import Response

from worker.web.asgi import Handler, error_reply

ASSET_PREFIX: Final = "/console/"
ASSETS: Final = {
    "console.css": "text/css",
    "app.js": "text/javascript",
    "api.js": "text/javascript",
    "links.js": "text/javascript",
    "browse.js": "text/javascript",
    "playground.js": "text/javascript",
    "status.js": "text/javascript",
    "transcript.js": "text/javascript",
    "markdown.js": "text/javascript",
    "when.js": "text/javascript",
    "highlight.js": "text/javascript",
    "palette.js": "text/javascript",
    "picker.js": "text/javascript",
    "exporter.js": "text/javascript",
    "usage.js": "text/javascript",
    "dom.js": "text/javascript",
}
CONTENT_SECURITY_POLICY: Final = "; ".join(
    [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "connect-src 'self'",
        "img-src 'self' data:",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
    ]
)
HEADERS: Final = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",  # the page's URL may carry ?token= for a moment
    "Cache-Control": "no-cache",  # an upgraded server serves its own page at once
}


def is_asset_path(path: str) -> bool:
    """One of the page's files (open: see the module docstring); nothing else under
    ``/console/`` is, whatever its segments."""
    return path.startswith(ASSET_PREFIX) and path[len(ASSET_PREFIX) :] in ASSETS


@functools.cache
def _read(name: str) -> str:
    """A page file's text, read once per process (a new version is a new process)."""
    files = resources.files("worker.transports.http.console")
    return files.joinpath(name).read_text(encoding="utf-8")


def _text(name: str, content_type: str) -> Response:
    return Response(_read(name), headers=HEADERS, media_type=f"{content_type}; charset=utf-8")


async def _page_view(_: Request) -> Response:
    return _text("index.html", "text/html")


async def _asset_view(request: Request) -> Response:
    name = request.scope["path"][len(ASSET_PREFIX) :]
    content_type = ASSETS.get(name)
    if content_type is None:
        return error_reply(404, "NOT_FOUND", "nothing is served at this path")
    return _text(name, content_type)


def console_routes() -> tuple[dict[tuple[str, str], Handler], dict[tuple[str, str], Handler]]:
    """The page's route and its files' prefix."""
    return {("GET", "/"): _page_view}, {("GET", ASSET_PREFIX): _asset_view}
