"""Process logging: human text or JSON lines (``--log-format json``), on stderr.

aiokafka logs every failed attempt while a broker is unreachable (dozens of ERROR
lines a second per client, with tracebacks): ``BrokerTrouble`` lets one of its warnings
or errors through every ``BROKER_LOG_EVERY_S``, as one WARNING line naming the
configured address and counting the lines it held back.

aiohttp's HTTP parser puts a header line it refuses (a bearer token followed by a bare
CR or a control byte, say) in its exception's message, and aiohttp logs that exception
with its traceback: ``RequestContent`` keeps every exception's message out of the log
for aiohttp's loggers and for any parser error, so no ``Authorization`` value (nor any
other request content) is ever written. Both filters sit on the process's one handler,
so they hold for every logger beneath it and for both formats.
"""

from __future__ import annotations

import logging
import sys
import time
import traceback

import orjson

BROKER_LOG_EVERY_S = 30.0


class BrokerTrouble(logging.Filter):
    """At most one aiokafka warning or error per ``every_s``, rewritten (module docstring)."""

    def __init__(self, bootstrap: str | None, every_s: float = BROKER_LOG_EVERY_S) -> None:
        super().__init__()
        self.bootstrap = bootstrap or "the configured bootstrap address"
        self.every_s = every_s
        self._last: float | None = None
        self._held = 0

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name == "asyncio" and record.getMessage().startswith("Unclosed AIOKafka"):
            return False  # a client whose stop timed out at exit: already said
        if not record.name.startswith("aiokafka") or record.levelno < logging.WARNING:
            return True
        now = time.monotonic()
        if self._last is not None and now - self._last < self.every_s:
            self._held += 1
            return False
        lines = record.getMessage().splitlines()
        held = f"; {self._held} like lines held back" if self._held else ""
        record.msg = "Kafka at %s: %s (aiokafka; at most one such line per %d s%s)"
        record.args = (self.bootstrap, lines[0] if lines else "?", int(self.every_s), held)
        record.levelno, record.levelname = logging.WARNING, "WARNING"
        record.name = "sessionq.kafka"
        record.exc_info, record.exc_text, record.stack_info = None, None, None
        self._last, self._held = now, 0
        return True


class RequestContent(logging.Filter):
    """No request content in a logged exception (module docstring): a parser's refusal
    becomes one line naming the exception's type and status; another exception logged by
    aiohttp keeps its traceback's frames, not its message. The level stays aiohttp's."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if exc is None or not (record.name.startswith("aiohttp") or _refused_request(exc)):
            return True
        record.exc_info, record.exc_text = None, None
        try:  # a filter that raises would raise in the caller's logging call
            said = record.getMessage()
        except Exception:
            said = str(record.msg)
        record.args = ()
        if _is_refusal(exc):
            code = getattr(exc, "code", "?")
            record.msg = f"{said}: a malformed request ({type(exc).__name__}, {code});"
            record.msg += " its content is not logged"
        else:
            record.msg = said
            frames = "".join(traceback.format_tb(exc.__traceback__))
            record.exc_text = (
                f"Traceback (most recent call last):\n{frames}{type(exc).__qualname__}"
                " (its message is not logged: it may hold request content)"
            )
        return True


def _is_refusal(exc: BaseException) -> bool:
    """Whether ``exc`` is aiohttp's ``HttpProcessingError`` (a parser's refusal). Only a
    process that imported aiohttp can hold one, so a process without it loads none."""
    module = sys.modules.get("aiohttp.http_exceptions")
    refusal = getattr(module, "HttpProcessingError", None)
    return refusal is not None and isinstance(exc, refusal)


def _refused_request(exc: BaseException) -> bool:
    """Whether ``exc`` or an exception it was raised from is a parser's refusal."""
    seen: BaseException | None = exc
    for _ in range(8):  # a chain is short; a cycle must not loop
        if seen is None:
            return False
        if _is_refusal(seen):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, object] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info:
            out["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:  # rewritten by ``RequestContent``
            out["exception"] = record.exc_text
        return orjson.dumps(out).decode()


def configure_logging(fmt: str, level: str = "INFO", kafka_bootstrap: str | None = None) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(BrokerTrouble(kafka_bootstrap))
    handler.addFilter(RequestContent())
    if fmt == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
