"""Anyone who reaches a port can make the HTTP server warn (a malformed request, an
unsupported upgrade, a connection over the bound): its warnings pass at most one per
window, the next one saying how many it held back; sessionq's own lines pass untouched."""

from __future__ import annotations

import logging

from worker.cli.logs import HttpRefusals


def warning(name: str, msg: str) -> logging.LogRecord:
    return logging.getLogger(name).makeRecord(name, logging.WARNING, __file__, 1, msg, (), None)


def test_the_http_server_s_warnings_pass_once_per_window() -> None:
    flood = HttpRefusals(every_s=3600)
    passed = [
        flood.filter(warning("uvicorn.error", "Invalid HTTP request received.")) for _ in range(5)
    ]
    assert passed == [True, False, False, False, False]
    assert flood.filter(warning("sessionq.serve", "our own line"))  # never held


def test_the_next_window_counts_what_was_held() -> None:
    flood = HttpRefusals(every_s=3600)
    assert flood.filter(warning("uvicorn.error", "Invalid HTTP request received."))
    assert not flood.filter(warning("uvicorn.error", "Exceeded concurrency limit."))
    assert flood._last is not None
    flood._last -= 3600  # the window has ended
    later = warning("uvicorn.error", "Exceeded concurrency limit.")
    assert flood.filter(later)
    assert later.getMessage().startswith("Exceeded concurrency limit. (HTTP server;")
    assert "1 like lines held back" in later.getMessage()
