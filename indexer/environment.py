"""The names of sessionq's environment variables: ``SESSIONQ_<SETTING>``, the setting's
name in upper case.

Standard library only: the command line's parser names every flag's variable in its help
without loading the settings models (``indexer.settings``, pydantic underneath).
"""

from __future__ import annotations

from typing import Final

ENV_PREFIX: Final = "SESSIONQ_"


def env_name(field: str) -> str:
    return ENV_PREFIX + field.upper()
