"""The test session: the shared fixtures (``tests/fixtures/``, registered here as plugins,
so no test module imports a conftest), the hypothesis profile, and the check that the
shared data beside the clone is there."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, settings

from tests.data_paths import CORPUS_DIR, SHARED, UPSTREAM_TOOL_SCHEMAS

pytest_plugins = (
    "tests.fixtures.kafka",
    "tests.fixtures.stores",
    "tests.fixtures.tools",
    "tests.fixtures.importers",
    "tests.fixtures.mcp",
    "tests.fixtures.serve",
    "tests.fixtures.snapshot",
)


def pytest_sessionstart(session: pytest.Session) -> None:
    """Other projects' data is read from the shared folder beside the clone, never copied
    in (``tests.data_paths``): without it the run stops here, saying where it looked."""
    missing = [p for p in (CORPUS_DIR, UPSTREAM_TOOL_SCHEMAS) if not p.exists()]
    if missing:
        raise pytest.UsageError(
            f"the shared data beside the clone is missing: {missing[0]} (the tests read the"
            f" real dsh logs and the upstream schemas from {SHARED}; CI lays it there)"
        )


# Property tests must not depend on the machine's speed: no per-example deadline and no
# "too slow" health check (a loaded 2-core machine is slow, not wrong).
settings.register_profile("sessionq", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("sessionq")
