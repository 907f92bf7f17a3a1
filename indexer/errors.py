"""Typed errors of the query family (SPEC §5.6) and of log/record validation.

One root class; each error carries a string ``code`` from the closed set in SPEC.md.
"""

from __future__ import annotations

from typing import Final

ABORTED: Final = "SESSION_QUERY_ABORTED"
CORRUPT_SESSION: Final = "SESSION_QUERY_CORRUPT_SESSION"
EVENT_NOT_FOUND: Final = "SESSION_QUERY_EVENT_NOT_FOUND"
INDEX_FAILED: Final = "SESSION_QUERY_INDEX_FAILED"
INVALID_CONFIG: Final = "SESSION_QUERY_INVALID_CONFIG"
INVALID_CURSOR: Final = "SESSION_QUERY_INVALID_CURSOR"
INVALID_FILTER: Final = "SESSION_QUERY_INVALID_FILTER"
INVALID_LIMIT: Final = "SESSION_QUERY_INVALID_LIMIT"
INVALID_QUERY: Final = "SESSION_QUERY_INVALID_QUERY"
INVALID_LINEAGE: Final = "SESSION_QUERY_INVALID_LINEAGE"
INVALID_SURFACE: Final = "SESSION_QUERY_INVALID_SURFACE"
INVALID_WINDOW: Final = "SESSION_QUERY_INVALID_WINDOW"
PERSISTENCE_FAILED: Final = "SESSION_QUERY_PERSISTENCE_FAILED"
SEARCH_DISABLED: Final = "SESSION_QUERY_SEARCH_DISABLED"
SESSION_NOT_FOUND: Final = "SESSION_QUERY_SESSION_NOT_FOUND"
STALE_CURSOR: Final = "SESSION_QUERY_STALE_CURSOR"
SOURCE_CONFLICT: Final = "SESSION_QUERY_SOURCE_CONFLICT"

TOOL_FAILED: Final = "SESSION_QUERY_TOOL_FAILED"

# Why an event-stream record was rejected (dead-letter ``code``s).
UNKNOWN_SESSION: Final = "SESSIONQ_UNKNOWN_SESSION"
SEQ_GAP: Final = "SESSIONQ_SEQ_GAP"
SEQ_CONFLICT: Final = "SESSIONQ_SEQ_CONFLICT"
INVALID_RECORD: Final = "SESSIONQ_INVALID_RECORD"
INVALID_REQUEST: Final = "SESSIONQ_INVALID_REQUEST"
REPLY_FAILED: Final = "SESSIONQ_REPLY_FAILED"
REPLY_TOPIC_REFUSED: Final = "SESSIONQ_REPLY_TOPIC_REFUSED"  # reply_to not allowed
REPLY_TOPIC_MISSING: Final = "SESSIONQ_REPLY_TOPIC_MISSING"  # reply_to does not exist
INTERNAL: Final = "SESSIONQ_INTERNAL"
RECORD_REJECTED: Final = "SESSIONQ_RECORD_REJECTED"


class SessionqError(Exception):
    """Root of every error sessionq raises on purpose; ``code`` (a class attribute, or
    given per instance) is from the closed set in SPEC.md plus the ``SESSIONQ_*``
    record and delivery codes above."""

    code: str = TOOL_FAILED

    def __init__(self, message: str, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r}, {self.code!r})"


class SessionQueryError(SessionqError):
    """A query-service failure (SPEC §5.6); the tool boundary maps it by code."""


class LogValidationError(SessionqError):
    """A session log (file or record batch) breaks a rule of SPEC §1-§2.

    ``message`` names the broken rule; ``line`` is the 1-based physical line of a
    file when known.
    """

    code = INVALID_SURFACE

    def __init__(self, message: str, *, line: int | None = None, code: str | None = None) -> None:
        super().__init__(message, code)
        self.line = line


class RecordRejectedError(SessionqError):
    """An event-stream record that cannot be applied; it is dead-lettered with this reason.

    ``hold`` is set when the rejection must leave the session *held* (a seq gap): the
    record path rolls the record back, then records that one state change.
    """

    code = RECORD_REJECTED

    def __init__(self, message: str, code: str | None = None, *, hold: str | None = None) -> None:
        super().__init__(message, code)
        self.hold = hold


class IndexFailedError(SessionQueryError):
    """Tantivy refused a document or a query (its ``ValueError``, typed); the tool
    boundary shows it as ``SESSION_QUERY_INDEX_FAILED``."""

    code = INDEX_FAILED


class RecordFailedError(SessionqError):
    """Applying a record failed for a reason that is not the record's fault (a bug, an
    I/O error); the record was rolled back, the rest of the batch stands."""

    code = INTERNAL


class UndeliverableError(SessionqError):
    """The broker will not take this record (missing topic, record too large)."""

    code = REPLY_FAILED


class TopicMissingError(UndeliverableError):
    """The broker said, at send time, that the topic does not exist; ``topic`` names it."""

    def __init__(self, message: str, topic: str) -> None:
        super().__init__(message)
        self.topic = topic


class KafkaAccessError(SessionqError):
    """The broker cannot be used as configured: unreachable, TLS not trusted, SASL
    credentials refused, an ACL missing. The message names the cause in one line."""

    code = INVALID_CONFIG


class BatchAbortedError(SessionqError):
    """Everything applied since the last commit is gone (a failed commit, or SQLite
    rolled the transaction back itself, e.g. on a full disk). The caller replays from
    its last committed position. ``index_committed``: Tantivy had committed the batch
    before SQLite failed, so the index is ahead of the tables until repaired."""

    code = PERSISTENCE_FAILED

    def __init__(self, message: str, *, index_committed: bool = False) -> None:
        super().__init__(message)
        self.index_committed = index_committed


class RedactionModeError(SessionqError):
    """The writer's ``--redact-secrets`` mode cannot apply to what the data dir stores
    (``indexer.redact.state``)."""

    code = INVALID_CONFIG
