"""A snapshot's ``manifest.json``: what it holds and how to check it.

The manifest is written last, so a snapshot without one is incomplete (an upload that
died) and is never restored. It lists every file with its size and sha256, the stored
Kafka offsets the copy resumes from, and the store schema version it was taken at.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import BinaryIO, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from indexer.snapshot.errors import SnapshotCorruptError

MANIFEST_NAME: Final = "manifest.json"
FORMAT: Final = "sessionq-snapshot/1"
# <UTC time to the millisecond>-<8 hex>: names sort by creation time.
NAME_RE: Final = re.compile(r"\d{8}T\d{9}Z-[0-9a-f]{8}")
_SAFE_PART: Final = re.compile(r"[A-Za-z0-9._-]+")
CHUNK: Final = 1 << 20


def new_name(now: datetime | None = None) -> str:
    """A fresh snapshot name, e.g. ``20261201T103354123Z-1a2b3c4d``."""
    now = (now or datetime.now(UTC)).astimezone(UTC)
    stamp = now.strftime("%Y%m%dT%H%M%S") + f"{now.microsecond // 1000:03d}Z"
    return f"{stamp}-{secrets.token_hex(4)}"


def name_time(name: str) -> datetime | None:
    """When a snapshot of this name was started (None for a name not ours)."""
    if not NAME_RE.fullmatch(name):
        return None
    return datetime.strptime(name[:15], "%Y%m%dT%H%M%S").replace(
        microsecond=int(name[15:18]) * 1000, tzinfo=UTC
    )


def safe_relpath(path: str) -> str:
    """A manifest path restore may write: relative, ``/``-separated, no ``..``."""
    parts = path.split("/")
    if len(parts) > 2 or any(p in (".", "..") or not _SAFE_PART.fullmatch(p) for p in parts):
        raise ValueError(f"unsafe file path {path!r}")
    return path


def sessionq_version() -> str:
    try:
        return metadata.version("sessionq")
    except metadata.PackageNotFoundError:
        return "unknown"


class FileEntry(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    path: str
    size: int = Field(ge=0)
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")

    @field_validator("path")
    @classmethod
    def _safe(cls, path: str) -> str:
        return safe_relpath(path)


class OffsetEntry(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    topic: str
    partition: int = Field(ge=0)
    next_offset: int = Field(ge=0)


class Manifest(BaseModel):
    """Everything restore needs to check and to resume."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    format: Literal["sessionq-snapshot/1"] = FORMAT
    name: str
    created_at: str
    sessionq_version: str
    schema_version: str | None
    offsets: list[OffsetEntry]
    files: list[FileEntry]
    tantivy_opstamp: int | None = None

    def total_bytes(self) -> int:
        return sum(f.size for f in self.files)

    def encode(self) -> bytes:
        return (self.model_dump_json(indent=2) + "\n").encode()

    @classmethod
    def decode(cls, raw: bytes, where: str) -> Manifest:
        try:
            manifest = cls.model_validate_json(raw)
        except ValidationError as exc:
            first = exc.errors()[0]
            loc = ".".join(str(p) for p in first.get("loc", ()))
            raise SnapshotCorruptError(
                f"{where}: invalid {MANIFEST_NAME} ({loc}: {first.get('msg', 'invalid')})"
            ) from exc
        paths = [f.path for f in manifest.files]
        if len(set(paths)) != len(paths):
            raise SnapshotCorruptError(f"{where}: {MANIFEST_NAME} lists a file twice")
        return manifest


def file_entry(root: Path, relpath: str) -> FileEntry:
    """Size and sha256 of ``root/relpath``."""
    digest = hashlib.sha256()
    size = 0
    with open(root / relpath, "rb") as f:
        while chunk := f.read(CHUNK):
            digest.update(chunk)
            size += len(chunk)
    return FileEntry(path=relpath, size=size, sha256=digest.hexdigest())


class TooLargeError(Exception):
    """A download passed its listed size (``seen``: the bytes it had reached)."""

    def __init__(self, seen: int) -> None:
        super().__init__(seen)
        self.seen = seen


class HashingWriter:
    """A file sink that hashes what passes through, so a download is checked as it lands
    (no second read of a multi-GB file)."""

    def __init__(self, out: BinaryIO, limit: int | None = None) -> None:
        """``limit``: the size the file should have; a byte beyond it raises
        ``TooLargeError`` before anything more is written."""
        self._out = out
        self._digest = hashlib.sha256()
        self.size = 0
        self.limit = limit

    def write(self, data: bytes | memoryview) -> int:
        if self.limit is not None and self.size + len(data) > self.limit:
            raise TooLargeError(self.size + len(data))
        self._digest.update(data)
        self.size += len(data)
        return self._out.write(data)

    def hexdigest(self) -> str:
        return self._digest.hexdigest()


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
