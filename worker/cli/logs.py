"""Process logging: human text or JSON lines (``--log-format json``), on stderr.

aiokafka logs every failed attempt while a broker is unreachable (dozens of ERROR
lines a second per client, with tracebacks): ``BrokerTrouble`` lets one of its warnings
or errors through every ``BROKER_LOG_EVERY_S``, as one WARNING line naming the
configured address and counting the lines it held back.
"""

from __future__ import annotations

import logging
import sys
import time

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
        return orjson.dumps(out).decode()


def configure_logging(fmt: str, level: str = "INFO", kafka_bootstrap: str | None = None) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(BrokerTrouble(kafka_bootstrap))
    if fmt == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
