"""Request/reply envelopes of the tool protocol (DESIGN.md, topic ``sessionq.requests``).

Hosts publish ``request`` and ``cancel`` records keyed by the caller's workspace routing
key; the worker answers on ``reply_to`` with exactly one ``reply`` per request id.
"""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, StrictInt, TypeAdapter, ValidationError

from indexer.errors import INVALID_REQUEST, SessionqError
from indexer.model.event import dump_json, load_json
from indexer.model.records import MAX_NESTING, describe_validation_error, nesting_exceeds
from worker.contract.errors import INVALID_ARGS
from worker.contract.outcome import ToolReply

MAX_REQUEST_BYTES: Final = 1024 * 1024
"""A request or cancel record (or HTTP body) larger than this is refused unparsed: the
requests topic takes no more (``max.message.bytes``), and parsing megabytes per record
would let one sender stall everyone else's calls."""


class _Envelope(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    v: Literal[1]


class CallerRef(BaseModel):
    """The caller, as its host vouches for it (the model never sets this). ``token`` is
    the host's proof (``worker.authn``): a JWT binding this request id, the session, its
    workspace and the digest of the whole envelope (claim ``req``); workers with a
    keyring refuse requests without a valid one."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    session_id: str | None = None
    step_seq: StrictInt | None = Field(default=None, ge=0)  # true / "1" are refused
    min_seq: StrictInt | None = Field(default=None, ge=0)  # true / "1" are refused
    token: str | None = Field(default=None, min_length=1, max_length=4096)


class ToolRequest(_Envelope):
    """One tool call. ``arguments`` are the model's, validated by the tool."""

    kind: Literal["request"]
    id: str = Field(min_length=1)
    reply_to: str = Field(min_length=1)
    tool: str
    arguments: Any = None
    caller: CallerRef | None = None
    timeout_ms: StrictInt | None = Field(default=None, ge=1)  # true / "100" are refused


class CancelRequest(_Envelope):
    """Abort an in-flight request; ``reason`` is echoed back, bounded (``bounded_reason``)."""

    kind: Literal["cancel"]
    id: str = Field(min_length=1)
    reason: Any = None
    caller: CallerRef | None = None  # with authentication: the request's own caller + token


class ReplyError(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    code: str
    message: str


class Reply(BaseModel):
    """Exactly one per request id; hosts drop duplicates by ``id``."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    v: Literal[1] = 1
    id: str
    ok: bool
    text: str | None = None
    error: ReplyError | None = None
    reason: Any = None

    def to_json(self) -> dict[str, Any]:
        if self.ok:
            return _reply_json(self.id, self.text, None, None, None)
        assert self.error is not None
        return _reply_json(self.id, None, self.error.code, self.error.message, self.reason)

    def encode(self) -> bytes:
        """The reply's JSON: a lone surrogate of its text (read from a stored event) as
        the escape it was stored as (``dump_json``)."""
        return dump_json(self.to_json())


def _reply_json(
    request_id: str, text: str | None, code: str | None, message: str | None, reason: Any
) -> dict[str, Any]:
    """The one shape of a reply as JSON: ``text`` when ok (no ``code``), else ``error``
    and, when there is one, the cancel's ``reason``."""
    if code is None:
        return {"v": 1, "id": request_id, "ok": True, "text": text}
    out: dict[str, Any] = {"v": 1, "id": request_id, "ok": False}
    out["error"] = {"code": code, "message": message}
    if reason is not None:
        out["reason"] = reason
    return out


RequestRecord = Annotated[ToolRequest | CancelRequest, Field(discriminator="kind")]
_ADAPTER: TypeAdapter[RequestRecord] = TypeAdapter(RequestRecord)


class EnvelopeError(SessionqError):
    """A request record that cannot be parsed; it goes to the DLQ with this reason."""

    code = INVALID_REQUEST


class InvalidRequestError(SessionqError):
    """A request that names its id and reply topic but is otherwise invalid: it gets an
    error reply (``INVALID_ARGS``) instead of a dead letter."""

    code = INVALID_ARGS

    def __init__(self, request_id: str, reply_to: str, reason: str) -> None:
        super().__init__(reason)
        self.request_id = request_id
        self.reply_to = reply_to
        self.reason = reason


def _first_error(exc: ValidationError) -> str:
    return describe_validation_error(exc).replace("record envelope", "request envelope", 1)


class _TooDeepError(Exception):
    """A request nested deeper than ``MAX_NESTING``: refused before pydantic sees it."""


def decode_request(value: bytes | None) -> RequestRecord:
    """Parse a request-topic record as JavaScript reads it (``load_json``: a lone
    surrogate escape in the arguments is data, and it counts in the request digest as
    the host's canonical form writes it, ``worker.authn.binding``).

    Raises ``EnvelopeError`` (dead-letter) when nobody can be answered, and
    ``InvalidRequestError`` (error reply) when the id and reply topic are usable.
    """
    if value is None:
        raise EnvelopeError("record has no value")
    if len(value) > MAX_REQUEST_BYTES:
        raise EnvelopeError(
            f"request record is {len(value)} bytes; the maximum is {MAX_REQUEST_BYTES} (not parsed)"
        )
    try:
        obj = load_json(value)
    except orjson.JSONDecodeError as exc:
        raise EnvelopeError(f"record value is not JSON: {exc}") from exc
    try:
        if nesting_exceeds(obj):
            raise _TooDeepError
        return _ADAPTER.validate_python(obj)
    except (ValidationError, _TooDeepError) as exc:
        reason = (
            f"invalid request envelope: nested deeper than {MAX_NESTING} levels"
            if isinstance(exc, _TooDeepError)
            else _first_error(exc)
        )
        if (
            isinstance(obj, dict)
            and obj.get("kind") == "request"
            and isinstance(obj.get("id"), str)
            and obj["id"]
            and isinstance(obj.get("reply_to"), str)
            and obj["reply_to"]
        ):
            raise InvalidRequestError(obj["id"], obj["reply_to"], reason) from exc
        raise EnvelopeError(reason) from exc


def decode_reply(value: bytes) -> Reply:
    """A reply as the host reads it (``load_json``, so a lone surrogate escape of its
    text is read as written); ``ValueError`` for anything else."""
    return Reply.model_validate(load_json(value))


def reply_for(request_id: str, result: ToolReply) -> Reply:
    """The reply envelope of one tool outcome (a cancel's raw reason rides along)."""
    if result.error is None:
        return Reply(id=request_id, ok=True, text=result.output or "")
    return Reply(
        id=request_id,
        ok=False,
        error=ReplyError(code=result.error.code, message=result.error.message),
        reason=result.cancel_reason,
    )


def encode_reply(request_id: str, result: ToolReply) -> bytes:
    """``reply_for(request_id, result).encode()`` without the model in between (a front
    end that only sends the bytes)."""
    error = result.error
    if error is None:
        return dump_json(_reply_json(request_id, result.output or "", None, None, None))
    return dump_json(
        _reply_json(request_id, None, error.code, error.message, result.cancel_reason)
    )


def error_reply(request_id: str, code: str, message: str) -> Reply:
    return Reply(id=request_id, ok=False, error=ReplyError(code=code, message=message))


class HttpCall(BaseModel):
    """``POST /v1/call`` body: the request envelope without ``reply_to`` (embedded mode)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    v: Literal[1] = 1
    kind: Literal["request"] = "request"
    id: str | None = Field(default=None, min_length=1)
    tool: str
    arguments: Any = None
    caller: CallerRef | None = None
    timeout_ms: StrictInt | None = Field(default=None, ge=1)  # true / "100" are refused


def first_validation_error(exc: ValidationError) -> str:
    return _first_error(exc)
