"""Process logging: human text or JSON lines (``--log-format json``), on stderr.

aiokafka logs every failed attempt while a broker is unreachable (dozens of ERROR
lines a second per client, with tracebacks): ``BrokerTrouble`` lets one of its warnings
or errors through every ``BROKER_LOG_EVERY_S``, as one WARNING line naming the
configured address and counting the lines it held back.

An HTTP parser may put a header line it refuses (a bearer token followed by a bare CR
or a control byte, say) in its exception's message, and a server may log that
exception with its traceback: ``RequestContent`` keeps every exception's message out of
the log for the HTTP server's loggers (uvicorn's) and for any parser error, so no
``Authorization`` value (nor any other request content) is ever written. Both filters
sit on the process's one handler, so they hold for every logger beneath it and for both
formats.
"""

from __future__ import annotations

import logging
import sys
import time
import traceback

import orjson

BROKER_LOG_EVERY_S = 30.0
HTTP_LOGGERS = ("uvicorn",)


class OnePerWindow(logging.Filter):
    """Lets one of its records through per ``every_s``; the next one to pass says how many
    like lines were held back meanwhile. A subclass says which records are its own
    (``mine``) and how a passing one reads (``rewrite``); any other record passes."""

    def __init__(self, every_s: float = BROKER_LOG_EVERY_S) -> None:
        super().__init__()
        self.every_s = every_s
        self._last: float | None = None
        self._held = 0

    def mine(self, record: logging.LogRecord) -> bool:
        raise NotImplementedError

    def rewrite(self, record: logging.LogRecord, held: str) -> None:
        raise NotImplementedError

    def filter(self, record: logging.LogRecord) -> bool:
        if not self.mine(record):
            return True
        now = time.monotonic()
        if self._last is not None and now - self._last < self.every_s:
            self._held += 1
            return False
        self.rewrite(record, f"; {self._held} like lines held back" if self._held else "")
        self._last, self._held = now, 0
        return True


class BrokerTrouble(OnePerWindow):
    """At most one aiokafka warning or error per ``every_s``, rewritten (module docstring)."""

    def __init__(self, bootstrap: str | None, every_s: float = BROKER_LOG_EVERY_S) -> None:
        super().__init__(every_s)
        self.bootstrap = bootstrap or "the configured bootstrap address"

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name == "asyncio" and record.getMessage().startswith("Unclosed AIOKafka"):
            return False  # a client whose stop timed out at exit: already said
        return super().filter(record)

    def mine(self, record: logging.LogRecord) -> bool:
        return record.name.startswith("aiokafka") and record.levelno >= logging.WARNING

    def rewrite(self, record: logging.LogRecord, held: str) -> None:
        lines = record.getMessage().splitlines()
        record.msg = "Kafka at %s: %s (aiokafka; at most one such line per %d s%s)"
        record.args = (self.bootstrap, lines[0] if lines else "?", int(self.every_s), held)
        record.levelno, record.levelname = logging.WARNING, "WARNING"
        record.name = "sessionq.kafka"
        record.exc_info, record.exc_text, record.stack_info = None, None, None


class HttpRefusals(OnePerWindow):
    """At most one of the HTTP server's warnings per ``every_s`` (uvicorn logs one per
    malformed request, unsupported upgrade or connection over the bound: anyone who
    reaches a port could flood the log), saying how many like lines it held back."""

    def mine(self, record: logging.LogRecord) -> bool:
        return record.name.startswith(HTTP_LOGGERS) and record.levelno >= logging.WARNING

    def rewrite(self, record: logging.LogRecord, held: str) -> None:
        try:
            said = record.getMessage()
        except Exception:
            said = str(record.msg)
        record.msg = "%s (HTTP server; at most one such line per %d s%s)"
        record.args = (said, int(self.every_s), held)


class RequestContent(logging.Filter):
    """No request content in a logged exception (module docstring): a parser's refusal
    becomes one line naming the exception's type and status; another exception logged by
    the HTTP server keeps its traceback's frames, not its message. The level stays the
    server's."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if exc is None or not (record.name.startswith(HTTP_LOGGERS) or _refused_request(exc)):
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


_PARSER_ERRORS = (("httptools", "HttpParserError"), ("h11", "RemoteProtocolError"))


def _is_refusal(exc: BaseException) -> bool:
    """Whether ``exc`` is an HTTP parser's refusal (httptools' or h11's). Only a process
    that imported the parser can hold one, so a process without it loads none."""
    for module, name in _PARSER_ERRORS:
        refusal = getattr(sys.modules.get(module), name, None)
        if isinstance(refusal, type) and isinstance(exc, refusal):
            return True
    return False


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


_STANDARD: frozenset[str] = frozenset(
    logging.LogRecord("", 0, "", 0, "", (), None).__dict__
) | {"message", "asctime", "color_message", "taskName"}
"""A log record's own attributes; any other came from the call's ``extra=``."""


class JsonFormatter(logging.Formatter):
    """One JSON object a line: time, level, logger, message, and the record's fields —
    what the logging call gave in ``extra=`` (``log.info("...", extra={"deleted": 3})``),
    so a collector filters on ``deleted`` instead of parsing the message. A field that
    JSON cannot hold is written as its ``repr``."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, object] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in record.__dict__.items():
            if key not in _STANDARD and key not in out:
                out[key] = value
        if record.exc_info:
            out["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:  # rewritten by ``RequestContent``
            out["exception"] = record.exc_text
        return orjson.dumps(out, default=repr).decode()


def configure_logging(fmt: str, level: str = "INFO", kafka_bootstrap: str | None = None) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(BrokerTrouble(kafka_bootstrap))
    handler.addFilter(RequestContent())
    handler.addFilter(HttpRefusals())
    if fmt == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
