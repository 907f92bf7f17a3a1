"""The ``.sessionq-demo.json`` summary beside the project folders: which sessions a demo
root holds, where, and what each is for."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

SUMMARY_FILE: Final = ".sessionq-demo.json"


@dataclass(frozen=True, slots=True)
class DemoSession:
    """One written log: who it is, where it is and what it is for."""

    id: str
    cwd: str | None
    parent: str | None
    title: str
    path: str  # relative to the root, POSIX separators
    events: int
    created_at: int
    scenario: str
    variant: int
    subagent: bool
    compaction_seq: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "cwd": self.cwd,
            "parent": self.parent,
            "title": self.title,
            "path": self.path,
            "events": self.events,
            "created_at": self.created_at,
            "scenario": self.scenario,
            "variant": self.variant,
            "subagent": self.subagent,
            "compaction_seq": self.compaction_seq,
        }

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> DemoSession:
        return cls(
            id=str(obj["id"]),
            cwd=obj["cwd"],
            parent=obj["parent"],
            title=str(obj["title"]),
            path=str(obj["path"]),
            events=int(obj["events"]),
            created_at=int(obj["created_at"]),
            scenario=str(obj["scenario"]),
            variant=int(obj["variant"]),
            subagent=bool(obj["subagent"]),
            compaction_seq=obj.get("compaction_seq"),
        )


@dataclass(frozen=True, slots=True)
class DemoSummary:
    root: Path
    seed: int
    sessions: tuple[DemoSession, ...]

    @property
    def workspaces(self) -> list[str]:
        return sorted({s.cwd for s in self.sessions if s.cwd is not None})

    @property
    def events(self) -> int:
        return sum(s.events for s in self.sessions)

    @property
    def subagents(self) -> list[DemoSession]:
        return [s for s in self.sessions if s.subagent]

    @property
    def compactions(self) -> list[DemoSession]:
        return [s for s in self.sessions if s.compaction_seq is not None]

    def paths(self) -> list[Path]:
        return [self.root / s.path for s in self.sessions]

    def find(self, scenario: str, *, subagent: bool = False) -> DemoSession:
        """The original (variant 0) session of ``scenario`` (or its subagent child)."""
        for s in self.sessions:
            if s.scenario == scenario and s.variant == 0 and s.subagent == subagent:
                return s
        raise KeyError(f"no {'subagent of ' if subagent else ''}{scenario} session in the corpus")

    def line(self) -> str:
        no_cwd = sum(1 for s in self.sessions if s.cwd is None)
        return (
            f"wrote {len(self.sessions)} demo sessions ({len(self.workspaces)} workspaces"
            f" + {no_cwd} without cwd, {len(self.subagents)} subagent children,"
            f" {len(self.compactions)} compaction, {self.events} events) to {self.root}"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "v": 1,
            "seed": self.seed,
            "sessions": [s.to_json() for s in self.sessions],
        }


def load_summary(root: Path) -> DemoSummary:
    """The summary a previous ``write_demo_corpus(root, …)`` left; FileNotFoundError if none."""
    obj = json.loads((root / SUMMARY_FILE).read_text(encoding="utf-8"))
    return DemoSummary(
        root=root,
        seed=int(obj["seed"]),
        sessions=tuple(DemoSession.from_json(s) for s in obj["sessions"]),
    )
