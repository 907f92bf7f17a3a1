"""Where a request's answer may go: the one decision about its ``reply_to``.

A topic is refused when the allow-list forbids it (``reply_topic_refusal``) or when the
broker says it does not exist. Existence is asked before a record is admitted: the
run loop collects a polled batch's reply topics it knows nothing about and asks the
broker about all of them in one metadata request (``PROBE_TIMEOUT_S`` at most), so a
record naming a missing topic is dead-lettered at once instead of holding an
admission slot while the producer waits (up to its request timeout) for the topic to
appear. Answers are remembered: a missing topic for ``MISSING_TTL_S``, an existing one
for ``PRESENT_TTL_S`` (a send that finds a topic missing makes the next batch ask
again); at most ``MAX_REMEMBERED`` names, the oldest forgotten first.
A broker that does not answer the probe in time decides nothing: the send itself is
tried. Every record refused for a missing topic is counted
(``sessionq_reply_topic_missing_total``); the log says so at most once per
``LOG_EVERY_S`` for the whole worker (one per process), whatever the topic names: a
flood naming a new topic per record is one line, not one per name (``MissingTopicLog``).
"""

from __future__ import annotations

import logging
import re
import time
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Final

from indexer.errors import REPLY_TOPIC_MISSING, REPLY_TOPIC_REFUSED
from indexer.kafka.client import Producer
from indexer.metrics import Metrics
from worker.settings import AnsweringSettings

log = logging.getLogger("sessionq.worker")
PROBE_TIMEOUT_S: Final = 1.0
MISSING_TTL_S: Final = 30.0
PRESENT_TTL_S: Final = 300.0
MAX_REMEMBERED: Final = 10_000
LOG_EVERY_S: Final = 60.0
_TOPIC_NAME = re.compile(r"[A-Za-z0-9._-]{1,249}")  # what Kafka accepts as a topic name


def reply_topic_refusal(topic: str, settings: AnsweringSettings) -> str | None:
    """Why the allow-list forbids replies to ``topic`` (None: it allows them).

    Allowed: the configured replies topic and any topic matching one of
    ``settings.reply_topics`` (``fnmatch`` patterns, case-sensitive). Refused whatever
    the patterns say: names Kafka would not accept, internal topics (``__`` prefix, e.g.
    ``__consumer_offsets``) and sessionq's own events, requests and dead-letter topics.
    """
    kafka = settings.kafka
    refused = f"reply_to {_shown(topic)!r} refused"
    if not _TOPIC_NAME.fullmatch(topic):
        return f"{refused}: not a valid topic name"
    if topic.startswith("__"):
        return f"{refused}: an internal topic"
    if topic in (kafka.events_topic, kafka.requests_topic, kafka.dlq_topic):
        return f"{refused}: a sessionq topic that takes no replies"
    if topic == kafka.replies_topic or any(fnmatchcase(topic, p) for p in settings.reply_topics):
        return None
    return f"{refused}: it matches no allowed reply topic (reply_topics)"


def _shown(topic: str) -> str:
    return topic if len(topic) <= 256 else f"{topic[:256]}..."


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why no answer may be produced to a request's ``reply_to``; it is dead-lettered."""

    reason: str
    code: str


class ReplyTopics:
    """The allow-list and what the broker said about each topic (module docstring)."""

    def __init__(self, settings: AnsweringSettings, producer: Producer, metrics: Metrics) -> None:
        self.settings = settings
        self.producer = producer
        self.metrics = metrics
        self._known: OrderedDict[str, tuple[bool, float]] = OrderedDict()  # -> (exists, when)
        self.missing_log = MissingTopicLog()

    def _exists(self, topic: str) -> bool | None:
        """What the broker said lately (None: nothing, or too long ago)."""
        entry = self._known.get(topic)
        if entry is None:
            return None
        exists, when = entry
        if time.monotonic() - when > (PRESENT_TTL_S if exists else MISSING_TTL_S):
            del self._known[topic]
            return None
        return exists

    def _remember(self, topic: str, exists: bool) -> None:
        self._known[topic] = (exists, time.monotonic())
        self._known.move_to_end(topic)
        while len(self._known) > MAX_REMEMBERED:
            self._known.popitem(last=False)

    async def probe(self, topics: Iterable[str]) -> None:
        """Ask the broker about every allowed topic of ``topics`` not known yet, in one
        metadata request; no answer in time leaves them unknown. Called once per poll, it
        also lets the missing-topic tally reach the log on time."""
        self.missing_log.flush(time.monotonic())
        unknown = {
            t
            for t in topics
            if reply_topic_refusal(t, self.settings) is None and self._exists(t) is None
        }
        if not unknown:
            return
        try:
            missing = await self.producer.missing_topics(unknown, timeout_s=PROBE_TIMEOUT_S)
        except Exception as exc:  # a slow or reconnecting broker: the sends will tell
            log.debug("reply topic probe failed: %s", exc)
            return
        for topic in unknown:
            self._remember(topic, topic not in missing)

    def doubt(self, topic: str) -> None:
        """A send found ``topic`` missing: forget what was known, so the next batch asks
        the broker (one failed send is not proof: a leader may be moving)."""
        self._known.pop(topic, None)

    def refusal(self, topic: str) -> Refusal | None:
        """Why nothing may be produced to ``topic`` (None: a reply may be tried)."""
        refused = reply_topic_refusal(topic, self.settings)
        if refused is not None:
            return Refusal(refused, REPLY_TOPIC_REFUSED)
        if self._exists(topic) is False:
            self._note_missing(topic)
            return Refusal(f"reply_to {_shown(topic)!r} does not exist", REPLY_TOPIC_MISSING)
        return None

    def _note_missing(self, topic: str) -> None:
        self.metrics.reply_topic_missing.inc()
        self.missing_log.note(topic, time.monotonic())


class MissingTopicLog:
    """The one WARNING about missing reply topics, rate-limited for the whole worker.

    The first missing topic after a quiet ``LOG_EVERY_S`` is logged at once, by name;
    the records that follow within ``LOG_EVERY_S`` are tallied (records, and distinct
    topics up to ``MAX_REMEMBERED``) and logged as one summary line once the interval
    has passed (``flush``, called on every poll, so a tally does not wait for the next
    missing topic). Topic names reach the log only after the allow-list took them, so
    they are plain Kafka names.
    """

    def __init__(self) -> None:
        self._logged_at: float | None = None
        self._records = 0
        self._topics: set[str] = set()
        self._example = ""

    def note(self, topic: str, now: float) -> None:
        """One record refused for ``topic`` at monotonic time ``now``."""
        self.flush(now)
        if self._logged_at is None or now - self._logged_at >= LOG_EVERY_S:
            self._logged_at = now
            log.warning(
                "reply_to %r does not exist: its requests are dead-lettered (logged at most"
                " once a minute for all topics; counted in sessionq_reply_topic_missing_total)",
                _shown(topic),
            )
            return
        self._records += 1
        if len(self._topics) < MAX_REMEMBERED:
            self._topics.add(topic)
        self._example = topic

    def flush(self, now: float) -> None:
        """Log the tally once ``LOG_EVERY_S`` has passed since the last line."""
        if not self._records or self._logged_at is None or now - self._logged_at < LOG_EVERY_S:
            return
        many = len(self._topics)
        log.warning(
            "%d more requests named %s%d missing reply topics (e.g. %r) in the last %d s:"
            " dead-lettered (counted in sessionq_reply_topic_missing_total)",
            self._records,
            "at least " if many >= MAX_REMEMBERED else "",
            many,
            _shown(self._example),
            round(now - self._logged_at),
        )
        self._logged_at, self._records, self._example = now, 0, ""
        self._topics.clear()
