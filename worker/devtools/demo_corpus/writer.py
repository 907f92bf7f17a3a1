"""The corpus: which sessions of which scenarios, their headers, turns and subagent
children, and writing them (and the summary) as a dsh persistence root."""

from __future__ import annotations

import json
import random
import shutil
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from worker.devtools.demo_corpus.builder import (
    CJK,
    MODEL,
    PROVIDER,
    Log,
    fallback_title,
    random_uuid,
)
from worker.devtools.demo_corpus.layout import session_path
from worker.devtools.demo_corpus.model import Delegation, Scenario, Step, ToolUse
from worker.devtools.demo_corpus.scenarios import FOLLOW_UP, SCENARIOS
from worker.devtools.demo_corpus.summary import (
    SUMMARY_FILE,
    DemoSession,
    DemoSummary,
    load_summary,
)

MIN_SESSIONS: Final = 8
BASE_TIME_MS: Final = int(datetime(2026, 3, 2, 1, 30, tzinfo=UTC).timestamp() * 1000)


@dataclass(frozen=True, slots=True)
class Written:
    log: Log
    session: DemoSession


def _header(session_id: str, created_at: int, cwd: str | None, **rest: Any) -> dict[str, Any]:
    """A session header in dsh's key order: version, id, createdAt, cwd (when there is
    one), then ``rest`` (lineage and delegation depth)."""
    header: dict[str, Any] = {"version": 0, "id": session_id, "createdAt": created_at}
    if cwd is not None:
        header["cwd"] = cwd
    return {**header, **rest}


def _closing_message(zh: bool) -> str:
    """What a subagent child says after its report."""
    return "已汇报。" if zh else "Reported."


def _vary(text: str, scenario: Scenario, variant: int, rng: random.Random) -> str:
    if variant == 0:
        return text
    prefix = rng.choice(FOLLOW_UP[scenario.lang])
    return f"{prefix}{text}"


def _write_child(
    parent: Log, scenario: Scenario, parent_id: str, child_id: str, task: Delegation
) -> Written:
    cwd = scenario.cwd
    rng = parent.rng
    header = _header(
        child_id,
        parent.now + 40,
        cwd,
        parentSession=parent_id,
        origin="subagent",
        delegationDepth=1,
    )
    log = Log(header=header, rng=rng, now=parent.now + 40)
    log.emit(
        "subagent/descriptor",
        {
            "version": 2,
            "mode": "continuable",
            "provider": "spawn",
            "label": task.description,
            "agentProvider": PROVIDER,
            "agentModel": MODEL,
        },
    )
    log.emit("session/end-seed", {})
    log.emit("approval/policy", {"policy": "never", "source": "delegation"})
    log.turn_start(gap=(5, 60))
    log.step_start()
    log.user(task.prompt)
    log.request_header()
    log.run_steps(task.steps)
    log.step_start()
    report = ToolUse(
        "report",
        {"output": task.report},
        f"report accepted by the agent that started you as message {log.uid()}",
    )
    closing = _closing_message(bool(CJK.search(task.report)))
    log.run_steps((Step(tools=(report,)), Step(say=closing)))
    log.turn_end()
    session = DemoSession(
        id=child_id,
        cwd=cwd,
        parent=parent_id,
        title=fallback_title(task.prompt),
        path=session_path(cwd, child_id),
        events=log.seq,
        created_at=header["createdAt"],
        scenario=scenario.key,
        variant=0,
        subagent=True,
    )
    return Written(log, session)


def _write_scenario(
    scenario: Scenario, variant: int, created_at: int, rng: random.Random, children: bool
) -> list[Written]:
    """The logs of one session of ``scenario`` (plus its subagent children)."""
    session_id = random_uuid(rng)
    header = _header(session_id, created_at, scenario.cwd, delegationDepth=0)
    log = Log(header=header, rng=rng, now=created_at)
    out: list[Written] = []
    first_user: int | None = None
    title = (
        scenario.title
        if variant == 0
        else (
            f"{scenario.title}（续）" if scenario.lang == "zh" else f"{scenario.title} (follow-up)"
        )
    )
    for t, turn in enumerate(scenario.turns):
        log.turn_start()
        log.step_start()
        user_seq = log.user(_vary(turn.user, scenario, variant if t == 0 else 0, rng))
        if first_user is None:
            first_user = user_seq
            log.request_header()
        if turn.compact is not None and variant == 0:
            log.compact(turn.compact)
        if turn.todos:
            log.todos(turn.todos)
        if turn.delegate is not None and children:
            task = turn.delegate
            child_id = log.uid()
            tool = ToolUse("subagent", {"description": task.description, "prompt": task.prompt}, "")
            _, calls = log.assistant(Step(say=task.announce, tools=(tool,)))
            call_id = calls[0][0]
            call_seq = log.tool_call(call_id, tool)
            child = _write_child(log, scenario, session_id, child_id, task)
            log.now = max(log.now, child.log.now)
            log.tool_result(
                call_id,
                call_seq,
                tool,
                f"Subagent {child_id} finished.\n\nReport:\n{task.report}\n\n"
                f"Closing message:\n{_closing_message(scenario.lang == 'zh')}",
            )
            log.step_end()
            log.step_start()
            out.append(child)
        seqs = log.run_steps(turn.steps)
        if t == 0 and seqs and first_user is not None:
            log.provider_title(title, [first_user, seqs[-1]])
        log.turn_end()
    session = DemoSession(
        id=session_id,
        cwd=scenario.cwd,
        parent=None,
        title=title,
        path=session_path(scenario.cwd, session_id),
        events=log.seq,
        created_at=created_at,
        scenario=scenario.key,
        variant=variant,
        subagent=False,
        compaction_seq=log.compaction_seq,
    )
    return [Written(log, session), *out]


def _plan(sessions: int, seed: int) -> list[Written]:
    if sessions < MIN_SESSIONS:
        raise ValueError(f"a demo corpus needs at least {MIN_SESSIONS} sessions, got {sessions}")
    rng = random.Random(seed)
    written: list[Written] = []
    created = BASE_TIME_MS
    rounds = 0
    while len(written) < sessions:
        for scenario in SCENARIOS:
            left = sessions - len(written)
            if left <= 0:
                break
            has_child = any(t.delegate is not None for t in scenario.turns)
            children = rounds == 0 and has_child and left >= 2
            created += rng.randint(40, 26 * 60) * 60_000
            written += _write_scenario(scenario, rounds, created, rng, children)
        rounds += 1
    return written


def _previous_summary(out: Path) -> DemoSummary | None:
    """The summary of an earlier demo in ``out``; refuses a directory that is not one."""
    if not out.exists():
        return None
    if not out.is_dir():
        raise NotADirectoryError(f"demo corpus output {out} is not a directory")
    if not (out / SUMMARY_FILE).is_file():
        if any(out.iterdir()):
            raise FileExistsError(
                f"refusing to write a demo corpus into non-empty {out} (no {SUMMARY_FILE})"
            )
        return None
    try:
        return load_summary(out)
    except (ValueError, KeyError, TypeError):
        return None


def _write_if_changed(path: Path, data: bytes) -> None:
    if path.is_file() and path.read_bytes() == data:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    tmp.replace(path)


def write_demo_corpus(out: Path, sessions: int, seed: int = 7) -> DemoSummary:
    """Write ``sessions`` demo session logs as a dsh persistence root under ``out``.

    Deterministic for ``(sessions, seed)``. Rewriting a demo root removes the sessions
    of the earlier demo that the new one lacks and leaves unchanged files untouched (a
    watcher sees no change). Raises ``ValueError`` for fewer than ``MIN_SESSIONS``
    sessions and ``FileExistsError`` for a non-empty directory that is not a demo root.
    """
    out = Path(out)
    plan = _plan(sessions, seed)
    previous = _previous_summary(out)
    wanted = {w.session.path for w in plan}
    if previous is not None:
        root = out.resolve()
        for old in previous.sessions:
            session_dir = (out / old.path).parent
            if (
                old.path not in wanted
                and session_dir.is_dir()
                and session_dir.resolve().is_relative_to(root)
                and session_dir.resolve() != root
            ):
                shutil.rmtree(session_dir)
    for w in plan:
        _write_if_changed(out / w.session.path, w.log.text().encode("utf-8"))
    summary = DemoSummary(root=out, seed=seed, sessions=tuple(w.session for w in plan))
    text = json.dumps(summary.to_json(), ensure_ascii=False, indent=1) + "\n"
    _write_if_changed(out / SUMMARY_FILE, text.encode("utf-8"))
    return summary
