"""Watch registrations (``indexer.sources.registry``): the writer watches the union of the
live processes' roots; a registration of a process that died is removed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from indexer.logs.watch import WatchRoot
from indexer.sources.registry import Registry, union
from tests.data_paths import REPO_ROOT

REGISTER = """
import sys, time
from pathlib import Path
from indexer.logs.watch import WatchRoot
from indexer.sources.registry import Registry
reg = Registry(Path(sys.argv[1])).register([WatchRoot(Path(sys.argv[2]), "codex")])
print(reg.name, flush=True)
time.sleep(600)
"""


def test_the_union_of_live_registrations_and_dead_ones_removed(tmp_path: Path) -> None:
    data = tmp_path / "data"
    registry = Registry(data)
    own = registry.register([WatchRoot(tmp_path / "claude"), WatchRoot(tmp_path / "shared")])
    proc = subprocess.Popen(
        [sys.executable, "-c", REGISTER, str(data), str(tmp_path / "codex")],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        other = proc.stdout.readline().strip()
        live = registry.live()
        assert {r.name for r in live} == {own.name, other}
        assert set(union(live)) == {
            WatchRoot(tmp_path / "claude"),
            WatchRoot(tmp_path / "shared"),
            WatchRoot(tmp_path / "codex", "codex"),
        }
        registry.mark_scanned([own.name])
        assert own.scanned
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    # The killed process's registration is gone at the next look; ours stays.
    assert [r.name for r in registry.live()] == [own.name]
    assert not (registry.directory / f"{other}.json").exists()
    own.close()
    assert registry.live() == []
