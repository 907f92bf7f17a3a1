"""Worker configuration: one frozen settings object, ``SESSIONQ_`` environment prefix."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class WorkerSettings(BaseSettings):
    """The worker role: answer tool calls from the requests topic over one data dir."""

    model_config = SettingsConfigDict(env_prefix="SESSIONQ_", frozen=True, extra="ignore")

    data: Path
    group: str = Field(default="sessionq-workers", description="consumer group id")
    max_search_results: int = Field(default=100, ge=1)
    search_timeout_ms: int = Field(default=30000, ge=1, le=2147483647)
    max_timeout_ms: int = Field(
        default=60000, ge=1, description="cap on a request's timeout_ms (and default for reads)"
    )
    max_in_flight: int = Field(default=64, ge=1, description="concurrent calls per process")
