"""The tools' deployment bounds, defined once (SPEC §11.3 plus sessionq's request cap).

``max_search_results`` and ``search_timeout_ms`` are upstream's tool configuration
(``maxSearchResults``/``searchTimeoutMs``, with upstream's ``TypeError`` messages);
``max_timeout_ms`` caps any request's deadline and is the budget of the exact reads.
The role settings (``worker.settings``) nest this model; nothing else holds a default.
"""

from __future__ import annotations

from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field, field_validator

from indexer.search_modes import DEFAULT_SEARCH_MODE, SearchMode

MAX_SAFE_INTEGER: Final = 9007199254740991
MAX_TIMER_DELAY_MS: Final = 2147483647


def _is_js_integer(value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return isinstance(value, int) or value.is_integer()


class ToolLimitError(TypeError):
    """Upstream's ``TypeError`` for an invalid limit, naming the setting it is about, so
    the command line can say which flag and variable gave it."""

    def __init__(self, setting: str, value: Any, message: str) -> None:
        super().__init__(message)
        self.setting = setting
        self.value = value


class ToolLimits(BaseModel):
    """Invalid values raise ``TypeError`` (as upstream's constructor does)."""

    model_config = ConfigDict(frozen=True, populate_by_name=True, extra="forbid")

    max_search_results: int = Field(
        default=100, alias="maxSearchResults", description="most hits a search returns"
    )
    search_timeout_ms: int = Field(
        default=30000, alias="searchTimeoutMs", description="time budget of the two searches"
    )
    max_timeout_ms: int = Field(
        default=60000,
        alias="maxTimeoutMs",
        description="cap on a request's timeout_ms (and the budget of the exact reads)",
    )
    search_mode: SearchMode = Field(
        default=DEFAULT_SEARCH_MODE,
        alias="searchMode",
        description="how a search query's text matches: words (its words in any order,"
        " by their stems, the exact phrase first) or phrase (upstream's literal phrase)",
    )

    @field_validator("max_search_results", mode="before")
    @classmethod
    def _check_max_search_results(cls, value: Any) -> int:
        if not _is_js_integer(value) or not 1 <= value <= MAX_SAFE_INTEGER:
            raise ToolLimitError(
                "max_search_results",
                value,
                "tool-session-query: maxSearchResults must be a positive safe integer",
            )
        return int(value)

    @field_validator("search_timeout_ms", mode="before")
    @classmethod
    def _check_search_timeout_ms(cls, value: Any) -> int:
        if not _is_js_integer(value) or not 1 <= value <= MAX_TIMER_DELAY_MS:
            raise ToolLimitError(
                "search_timeout_ms",
                value,
                "tool-session-query: searchTimeoutMs must be a positive integer no greater than "
                f"{MAX_TIMER_DELAY_MS}",
            )
        return int(value)

    @field_validator("max_timeout_ms", mode="before")
    @classmethod
    def _check_max_timeout_ms(cls, value: Any) -> int:
        if not _is_js_integer(value) or not 1 <= value <= MAX_TIMER_DELAY_MS:
            raise ToolLimitError(
                "max_timeout_ms",
                value,
                f"sessionq: maxTimeoutMs must be a positive integer no greater than "
                f"{MAX_TIMER_DELAY_MS}",
            )
        return int(value)
