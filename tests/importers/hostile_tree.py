"""A tree of session logs holding one of each hostile file (``test_hostile_files``'s
builders): a symlink loop (a file linked to itself, and a directory link back to the
root) in a Claude Code ``~/.claude/projects`` tree, and beside a good dsh log a dsh log
whose event line nests 1,000 levels deep and a FIFO named ``x.jsonl``."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import orjson

from indexer.logs.reader import MAX_LOG_NESTING
from tests.data_paths import CORPUS_DIR
from tests.fixtures.importers import CLAUDE_PROJECTS
from tests.importers.test_hostile_files import _deep_dsh

DSH_GOOD = CORPUS_DIR / "examples__acp-agent__bash-tool-turn__session.jsonl"
DEEP_LEVELS = 1000


@dataclass(frozen=True)
class HostileTree:
    claude: Path  # <root>/.claude/projects
    dsh: Path  # <root>/dsh
    loop: Path
    deep: Path
    fifo: Path
    dsh_id: str

    @property
    def roots(self) -> list[str]:
        return [str(self.claude), str(self.dsh)]

    @property
    def deep_reason(self) -> str:
        return f"{self.deep}:2: line is nested deeper than {MAX_LOG_NESTING} levels"


def hostile_tree(root: Path) -> HostileTree:
    claude = root / ".claude" / "projects"
    shutil.copytree(CLAUDE_PROJECTS, claude)
    first = sorted(claude.rglob("*.jsonl"))[0]
    loop = first.parent / "loop.jsonl"
    os.symlink(loop.name, loop)  # a link to itself
    (first.parent / "again").symlink_to(claude)  # a directory loop
    dsh = root / "dsh"
    dsh.mkdir()
    good = dsh / "good.jsonl"
    shutil.copyfile(DSH_GOOD, good)
    deep = _deep_dsh(dsh / "deep.jsonl", "deep", DEEP_LEVELS)
    fifo = dsh / "x.jsonl"
    os.mkfifo(fifo)
    dsh_id = orjson.loads(good.read_bytes().split(b"\n", 1)[0])["id"]
    return HostileTree(claude, dsh, loop, deep, fifo, dsh_id)
