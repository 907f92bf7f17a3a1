"""Who is calling and what they may see (SPEC §9.4, §9.5, §9.9).

A session is visible to the caller when it shares the caller's ``cwd`` (exact string
equality); the caller always sees itself while its own ``cwd`` is unchanged. Every
check that needs the store goes through the boundary, and every observation that
carries a header is re-checked, so a session that changed workspace between the
preflight and the read is still refused. Refusals never name a session.

These run inside a tool's run (in its one thread hand-off, ``boundary.in_thread``, or
on the loop: ``Tool.placement``): each is plain synchronous code around ``boundary.call``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from indexer.model import SessionHeader
from indexer.model.search import CwdFilter, IdFilter, SessionFilter
from indexer.query.protocol import QueryService
from indexer.query.types import SessionRecord
from worker.contract import boundary
from worker.contract.deadline import CancelToken
from worker.contract.errors import (
    SESSION_NOT_FOUND,
    UNAUTHORIZED,
    HarnessError,
    no_current_step,
    unauthorized,
)
from worker.tools.render import TitleView


@dataclass(frozen=True, slots=True)
class Caller:
    """The trusted caller of a request: the host's session id and, optionally, its step.

    ``step_seq`` is the seq of the caller's current ``step/start``; None means "the last
    ``step/start`` in the stored log" (deliberate difference 5).
    """

    session_id: str
    step_seq: int | None = None


@dataclass(frozen=True, slots=True)
class ResolvedCaller:
    """The caller with its stored header (its ``cwd`` is the workspace)."""

    id: str
    header: SessionHeader
    step_seq: int | None = None


def resolve_caller(service: QueryService, caller: Caller, token: CancelToken) -> ResolvedCaller:
    """The caller's stored header; an unknown one is NOT_FOUND (no caller at all is the
    pipeline's MISSING_AGENT)."""
    session_id = caller.session_id
    record = boundary.call(token, "caller resolution", lambda: service.get_session(session_id))
    if record is None or record.header.id != session_id:
        raise HarnessError("session was not found", SESSION_NOT_FOUND)
    return ResolvedCaller(session_id, record.header, caller.step_seq)


def current_step(service: QueryService, caller: ResolvedCaller, token: CancelToken) -> int:
    """Seq of the caller's current ``step/start``: the request's, else the store's last one."""
    if caller.step_seq is not None:
        return caller.step_seq
    seq = boundary.call(
        token, "current step lookup", lambda: service.last_step_start_seq(caller.id)
    )
    if seq is None:
        raise no_current_step()
    return seq


def target_id(session_id: str | None, caller: ResolvedCaller) -> str:
    """The requested session, verbatim; the caller itself when omitted."""
    return caller.id if session_id is None else session_id


def header_authorized(header: SessionHeader, caller: ResolvedCaller) -> bool:
    if header.id == caller.id:
        return header.cwd == caller.header.cwd
    return caller.header.cwd is not None and header.cwd == caller.header.cwd


def record_authorized(record: SessionRecord, caller: ResolvedCaller) -> bool:
    return header_authorized(record.header, caller)


def assert_observed(caller: ResolvedCaller, target: str, observed: SessionHeader | None) -> None:
    """An observation must be of the requested session and still visible, else UNAUTHORIZED."""
    if observed is None or observed.id != target or not header_authorized(observed, caller):
        raise unauthorized()


def authorize_target(
    service: QueryService, caller: ResolvedCaller, target: str, token: CancelToken
) -> None:
    """Preflight before any payload read; missing and foreign targets look the same."""
    if target == caller.id:
        return
    cwd = caller.header.cwd
    if cwd is None:
        raise unauthorized()
    records = boundary.call(
        token,
        "target authorization",
        lambda: service.filter_sessions([IdFilter((target,)), CwdFilter((cwd,))]),
    )
    if len(records) != 1:
        raise unauthorized()


def authorize_session_ids(
    service: QueryService, caller: ResolvedCaller, ids: Sequence[str], token: CancelToken
) -> set[str]:
    """The subset of ``ids`` the caller may name (one lookup for all ids but its own)."""
    unique = list(dict.fromkeys(ids))
    authorized = {caller.id} if caller.id in unique else set()
    cwd = caller.header.cwd
    others = tuple(i for i in unique if i != caller.id)
    if cwd is None or not others:
        return authorized
    records = boundary.call(
        token,
        "session-id authorization",
        lambda: service.filter_sessions([IdFilter(others), CwdFilter((cwd,))]),
    )
    requested = set(others)
    for record in records:
        if record.header.id in requested and record_authorized(record, caller):
            authorized.add(record.header.id)
    return authorized


class _MissingObservationError(Exception):
    """The title batch returned nothing for a requested id (a service contract breach)."""


def _unavailable(error: object) -> TitleView:
    sanitized = boundary.sanitize("title observation item", error)
    if sanitized.code == UNAUTHORIZED:
        raise unauthorized()
    return TitleView("untitled", sanitized.code)


def workspace_records(
    service: QueryService,
    caller: ResolvedCaller,
    token: CancelToken,
    *narrower: SessionFilter,
    what: str = "workspace listing",
) -> list[SessionRecord]:
    """The sessions of the caller's workspace it may see, narrowed by ``narrower`` (none
    without a workspace); read under ``token`` as ``what``."""
    cwd = caller.header.cwd
    if cwd is None:
        return []
    filters: list[SessionFilter] = [CwdFilter((cwd,)), *narrower]
    records = boundary.call(token, what, lambda: service.filter_sessions(filters))
    return [r for r in records if record_authorized(r, caller)]


def visible_titles(
    service: QueryService, ids: Sequence[str], caller: ResolvedCaller | None
) -> dict[str, str | None]:
    """Titles by id (None: untitled) of the sessions whose observed header ``caller`` may
    see (any, without a caller: the console's list of callers). A session that left the
    caller's workspace between a listing and this read is left out, as the tools'
    re-check would refuse it; the console shows it untitled instead of failing."""
    return {
        t.session_id: t.title.title if t.title else None
        for t in service.read_title_snapshots(ids)
        if t.header is not None and (caller is None or header_authorized(t.header, caller))
    }


def read_titles(
    service: QueryService, caller: ResolvedCaller, ids: Sequence[str], token: CancelToken
) -> dict[str, TitleView]:
    """One batch read for ``ids`` (even when empty); a view for every requested id.

    A fulfilled observation is re-checked (failure: the whole call is UNAUTHORIZED); a
    rejected one is sanitized into ``untitled (title unavailable: <code>)``.
    """
    requested = list(ids)
    observations = boundary.call(
        token, "title observation", lambda: service.read_title_snapshots(requested)
    )
    views: dict[str, TitleView] = {}
    for observation in observations:
        if observation.error is not None:
            views[observation.session_id] = _unavailable(observation.error)
            continue
        assert_observed(caller, observation.session_id, observation.header)
        title = observation.title
        views[observation.session_id] = TitleView("untitled" if title is None else title.title)
    for session_id in requested:
        if session_id not in views:
            views[session_id] = _unavailable(
                _MissingObservationError("title observation missing for a requested session")
            )
    return views


def read_title(
    service: QueryService, caller: ResolvedCaller, session_id: str, token: CancelToken
) -> TitleView:
    return read_titles(service, caller, [session_id], token)[session_id]
