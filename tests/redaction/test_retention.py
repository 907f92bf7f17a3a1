"""Retention with redaction on: a session holding a secret, expired by ``--retain-days``
in a real ``serve`` (its local source's housekeeping), leaves nothing of itself in the
data dir — not the secret (kept in the stored events in ``on``), not its redacted form
(the marker the index holds in either mode), not its redaction counts — while a session
within the retention period stays.

Each scan has its control: the same data dir, served first without retention, holds
every needle where the mode says it is kept.
"""

from __future__ import annotations

import random
import time
from pathlib import Path

import pytest

from indexer.redact import Redaction, RedactMode
from indexer.stats import store_stats
from tests.erasure_scan import marker, scan
from tests.fixtures.serve import eventually, running_embedded
from tests.redaction.labelled import MAKERS
from tests.redaction.test_end_to_end import stored_raw
from tests.serve.test_admin_delete import DAY_MS, write_session

REDACTED = b"[REDACTED:github-token]"


@pytest.mark.parametrize("mode", ["on", "store"])
async def test_an_expired_sessions_secret_and_its_redaction_leave_the_data_dir(
    tmp_path: Path, mode: RedactMode
) -> None:
    rng = random.Random(5)
    gone = marker(rng)
    kept = marker(rng, avoid=[gone])
    secret = MAKERS["github-token"][0](rng)
    root, data = tmp_path / "root", tmp_path / "data"
    now = int(time.time() * 1000)
    write_session(root, "old", f"{gone} export GITHUB_TOKEN={secret}", now - 45 * DAY_MS)
    write_session(root, "new", f"{kept} nothing secret here", now - 2 * DAY_MS)
    needles = [secret.encode(), secret.lower().encode(), gone.encode(), REDACTED, b"REDACTED"]
    redaction = Redaction(mode)

    # The control: without retention, every needle is where the mode keeps it.
    async with running_embedded(root, data, redaction=redaction):
        found = scan(data, needles)
        assert found[gone.encode()] and found[REDACTED], found  # the index's doc store
        raw = stored_raw(data)
        if mode == "on":  # the stored events keep the secret, the index has the marker
            assert secret.encode() in raw and REDACTED not in raw
        else:  # the stored events hold the marker instead
            assert secret.encode() not in raw and REDACTED in raw
        assert store_stats(data).redactions == {
            "github-token": 5
        }  # one per line of the old session

    async with running_embedded(
        root, data, redaction=redaction, retain_days=30, retention_check_s=0.05
    ) as (embedded, _, _):

        async def erased() -> bool:
            source = embedded.local.source
            assert source is not None
            if embedded.service.get_session("old") is not None or source.housekeeping.expired != 1:
                return False
            return not any(scan(data, needles).values())

        await eventually(erased, timeout=60, what="the old session deleted and purged")
        assert embedded.service.get_session("new") is not None
        assert scan(data, [kept.encode()])[kept.encode()]  # the scan still finds a kept one
        raw = stored_raw(data)
        assert secret.encode() not in raw and b"REDACTED" not in raw
        assert store_stats(data).redactions == {}
