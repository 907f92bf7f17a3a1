"""Typed errors of the query family (SPEC §5.6) and of log/record validation.

One root class; each error carries a ``code`` of the one closed set, ``ErrorCode``.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final


class ErrorCode(StrEnum):
    """The one closed set of error codes: the tools' (SPEC.md, what a reply's ``error``
    carries), the query service's (mapped at the model boundary,
    ``worker.contract.boundary``), and sessionq's own record, delivery and snapshot
    codes (``SESSIONQ_*``). A member is its code's text (``StrEnum``)."""

    # the query service's (SPEC §5.6)
    ABORTED = "SESSION_QUERY_ABORTED"
    CORRUPT_SESSION = "SESSION_QUERY_CORRUPT_SESSION"
    EVENT_NOT_FOUND = "SESSION_QUERY_EVENT_NOT_FOUND"
    INDEX_FAILED = "SESSION_QUERY_INDEX_FAILED"
    INVALID_CONFIG = "SESSION_QUERY_INVALID_CONFIG"
    INVALID_CURSOR = "SESSION_QUERY_INVALID_CURSOR"
    INVALID_FILTER = "SESSION_QUERY_INVALID_FILTER"
    INVALID_LIMIT = "SESSION_QUERY_INVALID_LIMIT"
    INVALID_QUERY = "SESSION_QUERY_INVALID_QUERY"
    INVALID_LINEAGE = "SESSION_QUERY_INVALID_LINEAGE"
    INVALID_SURFACE = "SESSION_QUERY_INVALID_SURFACE"
    INVALID_WINDOW = "SESSION_QUERY_INVALID_WINDOW"
    PERSISTENCE_FAILED = "SESSION_QUERY_PERSISTENCE_FAILED"
    SEARCH_DISABLED = "SESSION_QUERY_SEARCH_DISABLED"
    SESSION_NOT_FOUND = "SESSION_QUERY_SESSION_NOT_FOUND"
    STALE_CURSOR = "SESSION_QUERY_STALE_CURSOR"
    SOURCE_CONFLICT = "SESSION_QUERY_SOURCE_CONFLICT"
    TOOL_FAILED = "SESSION_QUERY_TOOL_FAILED"
    # the tools' (SPEC §9.4-§9.11, deliberate difference 6)
    MISSING_AGENT = "SESSION_QUERY_TOOL_MISSING_AGENT"
    UNAUTHORIZED = "SESSION_QUERY_TOOL_UNAUTHORIZED"
    NO_CURRENT_STEP = "SESSION_QUERY_TOOL_NO_CURRENT_STEP"
    INVALID_ARGS = "INVALID_ARGS"
    TOOL_TIMEOUT = "TOOL_TIMEOUT"
    TOOL_CANCELLED = "TOOL_CANCELLED"
    CALLER_UNAUTHENTICATED = "SESSION_QUERY_CALLER_UNAUTHENTICATED"
    BUSY = "SESSION_QUERY_BUSY"
    MISROUTED = "SESSION_QUERY_MISROUTED"  # a partitioned node got another partition's call
    # why an event-stream record or a request was rejected (dead-letter ``code``s)
    UNKNOWN_SESSION = "SESSIONQ_UNKNOWN_SESSION"
    SEQ_GAP = "SESSIONQ_SEQ_GAP"
    SEQ_CONFLICT = "SESSIONQ_SEQ_CONFLICT"
    INVALID_RECORD = "SESSIONQ_INVALID_RECORD"
    INVALID_REQUEST = "SESSIONQ_INVALID_REQUEST"
    REPLY_FAILED = "SESSIONQ_REPLY_FAILED"
    REPLY_TOPIC_REFUSED = "SESSIONQ_REPLY_TOPIC_REFUSED"  # reply_to not allowed
    REPLY_TOPIC_MISSING = "SESSIONQ_REPLY_TOPIC_MISSING"  # reply_to does not exist
    INTERNAL = "SESSIONQ_INTERNAL"
    RECORD_REJECTED = "SESSIONQ_RECORD_REJECTED"
    # why a snapshot could not be made or restored
    SNAPSHOT_FAILED = "SESSIONQ_SNAPSHOT_FAILED"  # storage unreachable, I/O error
    SNAPSHOT_NOT_FOUND = "SESSIONQ_SNAPSHOT_NOT_FOUND"  # no complete snapshot at SRC
    SNAPSHOT_CORRUPT = "SESSIONQ_SNAPSHOT_CORRUPT"  # a checksum, size or file is wrong
    DATA_NOT_EMPTY = "SESSIONQ_DATA_NOT_EMPTY"  # restore would overwrite a data dir


# The codes by name, for the modules that name one (``from indexer.errors import X``).
ABORTED: Final = ErrorCode.ABORTED
CORRUPT_SESSION: Final = ErrorCode.CORRUPT_SESSION
EVENT_NOT_FOUND: Final = ErrorCode.EVENT_NOT_FOUND
INDEX_FAILED: Final = ErrorCode.INDEX_FAILED
INVALID_CONFIG: Final = ErrorCode.INVALID_CONFIG
INVALID_CURSOR: Final = ErrorCode.INVALID_CURSOR
INVALID_FILTER: Final = ErrorCode.INVALID_FILTER
INVALID_LIMIT: Final = ErrorCode.INVALID_LIMIT
INVALID_QUERY: Final = ErrorCode.INVALID_QUERY
INVALID_LINEAGE: Final = ErrorCode.INVALID_LINEAGE
INVALID_SURFACE: Final = ErrorCode.INVALID_SURFACE
INVALID_WINDOW: Final = ErrorCode.INVALID_WINDOW
PERSISTENCE_FAILED: Final = ErrorCode.PERSISTENCE_FAILED
SEARCH_DISABLED: Final = ErrorCode.SEARCH_DISABLED
SESSION_NOT_FOUND: Final = ErrorCode.SESSION_NOT_FOUND
STALE_CURSOR: Final = ErrorCode.STALE_CURSOR
SOURCE_CONFLICT: Final = ErrorCode.SOURCE_CONFLICT
TOOL_FAILED: Final = ErrorCode.TOOL_FAILED
UNKNOWN_SESSION: Final = ErrorCode.UNKNOWN_SESSION
SEQ_GAP: Final = ErrorCode.SEQ_GAP
SEQ_CONFLICT: Final = ErrorCode.SEQ_CONFLICT
INVALID_RECORD: Final = ErrorCode.INVALID_RECORD
INVALID_REQUEST: Final = ErrorCode.INVALID_REQUEST
REPLY_FAILED: Final = ErrorCode.REPLY_FAILED
REPLY_TOPIC_REFUSED: Final = ErrorCode.REPLY_TOPIC_REFUSED
REPLY_TOPIC_MISSING: Final = ErrorCode.REPLY_TOPIC_MISSING
INTERNAL: Final = ErrorCode.INTERNAL
RECORD_REJECTED: Final = ErrorCode.RECORD_REJECTED


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
