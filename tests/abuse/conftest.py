"""The tool-test fixtures (a real store behind a recording spy) for the abuse suite."""

from tests.worker.conftest import make_harness  # noqa: F401
