"""The surface fold (SPEC §2): which events form the model-visible surface, and whether a
log is valid at all.

The fold is incremental (:class:`SurfaceFold`) because the store applies a session's
events batch by batch and must continue the fold from its persisted state; the
whole-log helpers (:func:`fold`, :func:`classify`) drive the same class. Each
:meth:`SurfaceFold.step` validates first and mutates last, so a violation leaves the
state exactly as it was.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from indexer.errors import LogValidationError
from indexer.model.event import SURFACE_ELIGIBLE, SessionEvent
from indexer.model.header import is_nonneg_safe_int
from indexer.model.search import Surface
from indexer.surface.result_shape import ResultShape

__all__ = [
    "FoldResult",
    "FoldStep",
    "FoldViolation",
    "NodeLookup",
    "ResultShape",
    "SurfaceFold",
    "classify",
    "fold",
    "json_equal",
]


NodeLookup = Callable[[int], "SessionEvent | ResultShape"]
"""An earlier node of the log by seq: the event, or what rule 5 compares of it."""


class FoldViolation(LogValidationError):
    """An event breaks a surface rule; ``message`` is the exact SPEC §2.1 text."""


@dataclass(frozen=True, slots=True)
class FoldStep:
    """What one event did to the surface.

    ``shadowed`` lists the nodes a replace removed, in surface order; ``start``/``end``
    are the declared replace bounds; ``sources`` are the validated ``sourceEventSeqs``
    (``None`` when the key is absent, always ``None`` for log-only events).
    """

    seq: int
    kind: Literal["log-only", "append", "replace"]
    shadowed: tuple[int, ...] = ()
    start: int | None = None
    end: int | None = None
    sources: tuple[int, ...] | None = None


class SurfaceFold:
    """The running fold state: ``nodes`` (the surface, fold order) and ``next_seq``."""

    __slots__ = ("next_seq", "nodes")

    def __init__(self, nodes: Sequence[int] = (), next_seq: int = 0) -> None:
        self.nodes: list[int] = list(nodes)
        self.next_seq: int = next_seq

    def step(self, event: SessionEvent, event_at: NodeLookup) -> FoldStep:
        """Validate ``event`` against the SPEC §2.1 rules in order, then apply it.

        Order: (1) contiguity, (2) eligibility and the ``surfaceOp`` marker, (3) the
        replace range, (4) provenance, (5) the tool/result rewrite rule, (6) apply.
        ``event_at(seq)`` returns an earlier event of the same log, or only its
        ``ResultShape``; it is called only for rule 5 (the shadowed node's type and
        data). Raises :class:`FoldViolation` and changes nothing when a rule is broken.
        """
        seq = event.seq
        if seq != self.next_seq:
            raise FoldViolation(
                f"session event seq {seq} is not contiguous; expected {self.next_seq}"
            )
        obj = event.obj
        etype = event.type
        if etype not in SURFACE_ELIGIBLE:
            if "surfaceOp" in obj:
                raise FoldViolation(
                    f'session event "{etype}" is not surface-eligible and cannot carry surfaceOp'
                )
            if "sourceEventSeqs" in obj:
                raise FoldViolation(
                    f'session event "{etype}" is not surface-eligible and cannot carry '
                    "sourceEventSeqs"
                )
            self.next_seq = seq + 1
            return FoldStep(seq, "log-only")

        if "surfaceOp" not in obj:
            raise FoldViolation(
                f'session event "{etype}" is surface-eligible and requires a surfaceOp marker'
            )
        op = obj["surfaceOp"]
        if op == "append" and isinstance(op, str):
            sources = _check_sources(event, ())
            self.nodes.append(seq)
            self.next_seq = seq + 1
            return FoldStep(seq, "append", sources=sources)
        if not isinstance(op, dict):
            raise FoldViolation(f'session event "{etype}" carries an invalid surfaceOp')
        if not _is_replace_op(op):
            raise FoldViolation(f'session event "{etype}" carries an invalid replace surfaceOp')

        start, end = int(op["start"]), int(op["end"])
        start_idx = _index_of(self.nodes, start)
        if start_idx < 0:
            raise FoldViolation(f"surface replace: start seq {start} not found in surface")
        end_idx = _index_of(self.nodes, end)
        if end_idx < 0:
            raise FoldViolation(f"surface replace: end seq {end} not found in surface")
        if start_idx > end_idx:
            raise FoldViolation(
                f"surface replace: start seq {start} (index {start_idx}) is after "
                f"end seq {end} (index {end_idx})"
            )
        shadowed = tuple(self.nodes[start_idx : end_idx + 1])
        sources = _check_sources(event, shadowed)
        if etype == "tool/result":
            _check_tool_result_rewrite(event, shadowed, event_at)

        self.nodes[start_idx : end_idx + 1] = [seq]
        self.next_seq = seq + 1
        return FoldStep(seq, "replace", shadowed, start, end, sources)

    def skip_log_only(self, seq: int, count: int) -> None:
        """Fold ``count`` consecutive log-only events from ``seq`` that carry neither
        ``surfaceOp`` nor ``sourceEventSeqs`` (a packed chunk row's members): the steps
        would all be ``log-only``, and only the first can break contiguity."""
        if seq != self.next_seq:
            raise FoldViolation(
                f"session event seq {seq} is not contiguous; expected {self.next_seq}"
            )
        self.next_seq = seq + count


def _index_of(nodes: list[int], seq: int) -> int:
    try:
        return nodes.index(seq)
    except ValueError:
        return -1


def _is_replace_op(op: dict[str, Any]) -> bool:
    """Exactly ``{op: "replace", start, end}`` with non-negative safe-integer bounds."""
    return (
        len(op) == 3
        and op.get("op") == "replace"
        and isinstance(op.get("op"), str)
        and "start" in op
        and "end" in op
        and is_nonneg_safe_int(op["start"])
        and is_nonneg_safe_int(op["end"])
    )


def _check_sources(event: SessionEvent, shadowed: tuple[int, ...]) -> tuple[int, ...] | None:
    """SPEC §2.1 step 4, in its exact order; returns the sources as ints."""
    obj = event.obj
    sources: tuple[int, ...] | None = None
    if "sourceEventSeqs" in obj:
        raw = obj["sourceEventSeqs"]
        if not isinstance(raw, list):
            raise FoldViolation(
                f"sourceEventSeqs on event at seq {event.seq} must be an array when present"
            )
        if not raw and event.type != "assistant/message":
            raise FoldViolation("sourceEventSeqs must not be empty except on assistant/message")
        values: list[int] = []
        first_not_earlier: int | None = None
        for item in raw:
            if not is_nonneg_safe_int(item):
                raise FoldViolation(
                    f'session event "{event.type}" sourceEventSeqs must densely contain '
                    "non-negative safe integers"
                )
            value = int(item)
            values.append(value)
            if first_not_earlier is None and value >= event.seq:
                first_not_earlier = value
        if len(set(values)) != len(values):
            raise FoldViolation("sourceEventSeqs must not contain duplicates")
        if first_not_earlier is not None:
            raise FoldViolation(
                "sourceEventSeqs must reference earlier events: "
                f"{first_not_earlier} >= current seq {event.seq}"
            )
        sources = tuple(values)
    if shadowed:
        cited = set(sources or ())
        missing = [seq for seq in shadowed if seq not in cited]
        if missing:
            raise FoldViolation(
                "surface replace: sourceEventSeqs must include every shadowed surface node; "
                f"missing {', '.join(str(seq) for seq in missing)}"
            )
    return sources


def _check_tool_result_rewrite(
    event: SessionEvent,
    shadowed: tuple[int, ...],
    event_at: NodeLookup,
) -> None:
    """SPEC §2.1 step 5: a tool/result replace may only rewrite one result's content."""
    if len(shadowed) != 1:
        raise FoldViolation("tool/result surface replacement must rewrite exactly one current node")
    found = event_at(shadowed[0])
    original = found if isinstance(found, ResultShape) else ResultShape.of(found)
    if not original.is_result:
        raise FoldViolation("tool/result surface replacement must target a current tool/result")
    if original != ResultShape.of(event):
        raise FoldViolation("tool/result surface replacement may change only content")


def json_equal(a: Any, b: Any) -> bool:
    """JSON deep equality: arrays element-wise, objects by key set (order-insensitive),
    numbers by value (``1 == 1.0``), booleans only equal booleans (``true != 1``).

    Iterative, so arbitrarily deep payloads cannot exhaust the Python stack.
    """
    pending: list[tuple[Any, Any]] = [(a, b)]
    while pending:
        x, y = pending.pop()
        if isinstance(x, bool) or isinstance(y, bool):
            if not (isinstance(x, bool) and isinstance(y, bool) and x == y):
                return False
        elif isinstance(x, (int, float)) or isinstance(y, (int, float)):
            if not (isinstance(x, (int, float)) and isinstance(y, (int, float)) and x == y):
                return False
        elif isinstance(x, str) or isinstance(y, str):
            if not (isinstance(x, str) and isinstance(y, str) and x == y):
                return False
        elif x is None or y is None:
            if not (x is None and y is None):
                return False
        elif isinstance(x, list) and isinstance(y, list):
            if len(x) != len(y):
                return False
            pending.extend(zip(x, y, strict=True))
        elif isinstance(x, dict) and isinstance(y, dict):
            if len(x) != len(y):
                return False
            for key, value in x.items():
                if key not in y:
                    return False
                pending.append((value, y[key]))
        else:
            return False
    return True


@dataclass(frozen=True, slots=True)
class FoldedLog:
    """A log (or a piece of one) folded by a reader: the steps of its events from seq
    ``start``, where the surface was ``start_nodes``, and the state after them, so the
    store can apply them without folding them a second time."""

    steps: list[FoldStep]
    state: SurfaceFold
    start: int = 0
    start_nodes: list[int] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class FoldResult:
    """A whole-log fold: the final surface and every replace step, in event order."""

    nodes: list[int]
    replacements: list[FoldStep]


def fold(events: Sequence[SessionEvent]) -> FoldResult:
    """Fold a complete log from seq 0; the first violation raises :class:`FoldViolation`."""
    state = SurfaceFold()
    replacements: list[FoldStep] = []
    at = events.__getitem__
    for event in events:
        step = state.step(event, at)
        if step.kind == "replace":
            replacements.append(step)
    return FoldResult(state.nodes, replacements)


def classify(events: Iterable[SessionEvent]) -> list[Surface]:
    """SPEC §2.2 for a complete log: ``current``, ``shadowed`` or ``log-only`` per event.

    A replacement that is later replaced itself is ``shadowed``.
    """
    log = list(events)
    result = fold(log)
    current = set(result.nodes)
    shadowed = {seq for step in result.replacements for seq in step.shadowed}
    out: list[Surface] = []
    for event in log:
        if event.seq in current:
            out.append("current")
        elif event.seq in shadowed:
            out.append("shadowed")
        else:
            out.append("log-only")
    return out
