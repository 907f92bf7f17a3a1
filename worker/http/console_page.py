"""The console page of ``sessionq serve``: ``/`` and its static files under ``/console/``.

The page is static: it shows what the API answers and holds no data itself. Its files
are the package's own (``worker/http/console``), served from a fixed table, so no part
of a request path reaches the file system. Every response carries a
Content-Security-Policy that lets scripts, styles and requests come from this origin
only (no inline script, no external resource): text from session logs that ever reached
the DOM as markup could still not run — and the page never parses it as markup, it
builds DOM nodes with ``textContent``.

``/`` follows the API's token rule (``worker.http.api``); the files under ``/console/``
are open like the probes: a browser fetches them without the page's bearer token, and
they are the same public files in every installation.
"""

from __future__ import annotations

from importlib import resources
from typing import Final

from aiohttp import web

ASSET_PREFIX: Final = "/console/"
ASSETS: Final = {
    "console.css": "text/css",
    "app.js": "text/javascript",
    "api.js": "text/javascript",
    "links.js": "text/javascript",
    "browse.js": "text/javascript",
    "playground.js": "text/javascript",
    "status.js": "text/javascript",
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


def _read(name: str) -> str:
    return resources.files("worker.http.console").joinpath(name).read_text(encoding="utf-8")


async def _page_view(_: web.Request) -> web.Response:
    return web.Response(text=_read("index.html"), content_type="text/html", headers=HEADERS)


async def _asset_view(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    content_type = ASSETS.get(name)
    if content_type is None:
        raise web.HTTPNotFound()
    return web.Response(text=_read(name), content_type=content_type, headers=HEADERS)


def console_routes() -> list[web.RouteDef]:
    return [web.get("/", _page_view), web.get(ASSET_PREFIX + "{name}", _asset_view)]
