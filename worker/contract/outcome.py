"""What one tool call comes to, before any transport wraps it in an envelope."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from worker.contract.errors import ToolFailure


@dataclass(frozen=True, slots=True)
class ToolReply:
    """The one reply of a call: ``output`` text, or an ``error`` (plus a cancel's raw reason)."""

    output: str | None = None
    error: ToolFailure | None = None
    cancel_reason: Any = None

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def text(self) -> str:
        """The single text block the model receives (``Error: <message>`` on failure)."""
        if self.error is not None:
            return self.error.text
        return self.output or ""
