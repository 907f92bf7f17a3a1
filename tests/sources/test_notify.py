"""File notifications (``indexer.logs.notify``): a change is reported at once, nothing is
reported while nothing changes, and polling is chosen where notifications do not work."""

from __future__ import annotations

import asyncio
from pathlib import Path

from indexer.logs.notify import ChangeNotifier, file_system_of, plan_for


async def reported(notifier: ChangeNotifier, log: Path) -> set[Path]:
    """What the notifier reports until it names ``log`` (a loaded machine may deliver
    late: up to 100 waits of 1 s, never a fixed sleep)."""
    seen: set[Path] = set()
    for _ in range(100):
        seen |= await notifier.wait(1.0)
        if log in seen:
            break
    return seen


async def test_a_change_is_reported_and_an_idle_tree_reports_nothing(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    notifier = ChangeNotifier([tmp_path])
    notifier.start()
    try:
        assert notifier.mode == "notify"
        assert await notifier.wait(0.3) == set()
        log = tmp_path / "a" / "s.jsonl"
        log.write_text('{"type":"session"}\n')
        assert log in await reported(notifier, log)
    finally:
        notifier.close()


async def test_polling_reports_changes_too(tmp_path: Path) -> None:
    notifier = ChangeNotifier([tmp_path], force_polling=True)
    notifier.start()
    try:
        assert notifier.mode == "poll"
        await asyncio.sleep(0)
        log = tmp_path / "s.jsonl"
        log.write_text("x\n")
        assert log in await reported(notifier, log)
    finally:
        notifier.close()


def test_a_network_file_system_is_polled(tmp_path: Path) -> None:
    mounts = [("/mnt/nfs", "nfs4"), ("/", "ext4")]
    assert file_system_of(Path("/mnt/nfs/home/dev"), mounts) == "nfs4"
    assert file_system_of(Path("/mnt/nfsx"), mounts) == "ext4"
    remote = plan_for([tmp_path], mounts=[(str(tmp_path), "nfs4"), ("/", "ext4")])
    assert remote.mode == "poll" and "network file system" in remote.reason
    local = plan_for([tmp_path], mounts=[("/", "ext4")])
    assert local.mode == "notify"
    forced = plan_for([tmp_path], force_polling=True)
    assert forced.mode == "poll" and forced.poll_delay_ms >= 1000
