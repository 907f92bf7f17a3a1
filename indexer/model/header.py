"""The immutable session header (SPEC §1.1, deliberate difference 8)."""

from __future__ import annotations

import re
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from indexer.errors import LogValidationError

MAX_SAFE_INTEGER = 9007199254740991
DSH_AGENT = "dsh"


def is_safe_int(value: Any) -> bool:
    """JavaScript safe integer: bools never count, integral floats do."""
    if type(value) is int:  # the common case first: this runs for every seq and time
        return -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER
    if isinstance(value, float):
        return value.is_integer() and -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER
    return False


def is_nonneg_safe_int(value: Any) -> bool:
    return is_safe_int(value) and value >= 0


class SessionHeader(BaseModel):
    """A session's immutable identity; ``cwd`` absent means "no workspace"."""

    model_config = ConfigDict(frozen=True, populate_by_name=True, extra="forbid")

    version: int = 0
    id: str
    created_at: int = Field(alias="createdAt")
    cwd: str | None = None
    parent_session: str | None = Field(default=None, alias="parentSession")
    seed_length: int | None = Field(default=None, alias="seedLength")
    origin: Literal["subagent"] | None = None
    delegation_depth: int | None = Field(default=None, alias="delegationDepth")
    agent_preset: str | None = Field(default=None, alias="agentPreset")
    # The agent whose log the session was imported from; absent = a dsh session.
    source_agent: str | None = Field(default=None, alias="sourceAgent")

    def to_json(self) -> dict[str, Any]:
        """The on-disk header object (``type`` tag excluded), optional fields only when set."""
        out: dict[str, Any] = {"version": self.version, "id": self.id, "createdAt": self.created_at}
        if self.cwd is not None:
            out["cwd"] = self.cwd
        if self.parent_session is not None:
            out["parentSession"] = self.parent_session
        if self.seed_length is not None:
            out["seedLength"] = self.seed_length
        if self.origin is not None:
            out["origin"] = self.origin
        if self.delegation_depth is not None:
            out["delegationDepth"] = self.delegation_depth
        if self.agent_preset is not None:
            out["agentPreset"] = self.agent_preset
        if self.source_agent is not None:
            out["sourceAgent"] = self.source_agent
        return out

    @property
    def agent(self) -> str:
        """The source agent, ``dsh`` when the header names none."""
        return self.source_agent if self.source_agent is not None else DSH_AGENT

    def compatible_with(self, other: SessionHeader) -> bool:
        """SPEC §1.1: the immutable fields two observations of one session must share."""
        return (
            self.version == other.version
            and self.id == other.id
            and self.created_at == other.created_at
            and self.cwd == other.cwd
            and self.parent_session == other.parent_session
            and self.seed_length == other.seed_length
            and (self.delegation_depth or 0) == (other.delegation_depth or 0)
            and self.source_agent == other.source_agent
        )

    @property
    def routing_key(self) -> str:
        """The Kafka key of every record of this session (DESIGN.md topics)."""
        return self.cwd if self.cwd is not None else f"session:{self.id}"


_IDENTIFYING: Final = ("id", "cwd", "parentSession", "agentPreset", "sourceAgent")
_SURROGATE: Final = re.compile("[\ud800-\udfff]")


def storable_id(value: str) -> bool:
    """Whether a session id can name a stored session (``ill_formed_field``): one that
    holds a lone surrogate names none, and is looked up as missing, never queried."""
    return _SURROGATE.search(value) is None


def ill_formed_field(header: dict[str, Any]) -> str | None:
    """Why a header (its JSON object) cannot be stored, when one of its strings holds a
    lone UTF-16 surrogate: a session is keyed, routed and partitioned by them as UTF-8,
    which cannot hold one (event text can: docs/host-integration.md, "Strings")."""
    for key in _IDENTIFYING:
        value = header.get(key)
        if isinstance(value, str) and _SURROGATE.search(value):
            return f"session header {key} holds a lone UTF-16 surrogate (a cut character)"
    return None


def parse_header(obj: Any, *, expected_id: str | None = None) -> SessionHeader:
    """Validate a header object with the exact messages of SPEC §1.1.

    A ``type: "session"`` tag is accepted (file line 1); a missing ``version`` reads
    as 0 and a missing ``delegationDepth`` stays absent (deliberate difference 8).
    """
    if not isinstance(obj, dict):
        raise LogValidationError("session header is not a plain JSON record")
    allowed = {
        "type",
        "version",
        "id",
        "createdAt",
        "cwd",
        "parentSession",
        "seedLength",
        "origin",
        "delegationDepth",
        "agentPreset",
        "sourceAgent",
    }
    unknown = [k for k in obj if k not in allowed]
    if unknown:
        raise LogValidationError(f'session header has unknown key "{unknown[0]}"')
    if "type" in obj and obj["type"] != "session":
        raise LogValidationError('session header must be tagged "type":"session"')
    version = obj.get("version", 0)
    if version != 0 or isinstance(version, bool):
        raise LogValidationError(f"session header version must be 0, got {version}")
    sid = obj.get("id")
    if not isinstance(sid, str):
        raise LogValidationError("session header id must be a string")
    if expected_id is not None and sid != expected_id:
        raise LogValidationError(
            f'session header id "{sid}" does not match session id "{expected_id}"'
        )
    created = obj.get("createdAt")
    if not is_nonneg_safe_int(created):
        raise LogValidationError("session header createdAt must be a non-negative safe integer")
    cwd = obj.get("cwd")
    if "cwd" in obj:
        if not isinstance(cwd, str):
            raise LogValidationError("session header cwd must be a string")
        if not cwd.startswith("/"):
            raise LogValidationError(f'session header cwd must be an absolute path, got "{cwd}"')
    parent = obj.get("parentSession")
    if "parentSession" in obj and not isinstance(parent, str):
        raise LogValidationError("session header parentSession must be a string")
    for key in ("seedLength", "delegationDepth"):
        if key in obj and not is_nonneg_safe_int(obj[key]):
            raise LogValidationError(f"session header {key} must be a non-negative safe integer")
    if "origin" in obj and obj["origin"] != "subagent":
        raise LogValidationError('session header origin must be "subagent"')
    if "agentPreset" in obj and not isinstance(obj["agentPreset"], str):
        raise LogValidationError("session header agentPreset must be a string")
    agent = obj.get("sourceAgent")
    if "sourceAgent" in obj and (not isinstance(agent, str) or not agent):
        raise LogValidationError("session header sourceAgent must be a non-empty string")
    fault = ill_formed_field(obj)
    if fault is not None:
        raise LogValidationError(fault)
    return SessionHeader(
        version=0,
        id=sid,
        createdAt=int(obj["createdAt"]),
        cwd=cwd,
        parentSession=parent,
        seedLength=int(obj["seedLength"]) if "seedLength" in obj else None,
        origin=obj.get("origin"),
        delegationDepth=int(obj["delegationDepth"]) if "delegationDepth" in obj else None,
        agentPreset=obj.get("agentPreset"),
        sourceAgent=agent,
    )
