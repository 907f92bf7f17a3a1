"""Where snapshots live: a local directory or an S3-compatible bucket (``s3://bucket/p``).

Both hold one folder (key prefix) per snapshot, ``<location>/<name>/...``, with the
snapshot's ``manifest.json`` written last. S3 goes through ``obstore`` (object_store's
Rust client: multipart uploads, retries, the standard AWS credential chain); its errors
come back as ``SnapshotError`` with one line naming the location, never a credential.
"""

from __future__ import annotations

import errno
import fcntl
import os
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Final, Protocol
from urllib.parse import urlsplit

from indexer.settings import S3Settings
from indexer.snapshot.errors import SnapshotCorruptError, SnapshotError
from indexer.snapshot.manifest import TooLargeError
from indexer.store.private import copy_file, make_dirs, open_file, write_file

if TYPE_CHECKING:
    from obstore.store import ClientConfig, S3Config, S3Store

S3_SCHEME: Final = "s3"
_GET_CHUNK: Final = 8 << 20
_DELETE_BATCH: Final = 1000
_FICLONE: Final = 0x40049409  # linux/fs.h: share the source's extents (a reflink)
_O_NONBLOCK: Final = os.O_NONBLOCK  # a FIFO in a snapshot must not block its open


class FileMissingError(SnapshotError):
    """The location has no object at that path."""


class UnsupportedLocationError(SnapshotError):
    """Neither a directory nor ``s3://bucket/prefix`` (a usage error)."""


class SnapshotStore(Protocol):
    """A location holding snapshots. Paths are relative to it and ``/``-separated."""

    where: str  # for messages: the location as given, without credentials

    def children(self) -> list[str]:
        """Names of the folders directly below the location."""

    def exists(self, path: str) -> bool: ...

    def read_bytes(self, path: str) -> bytes: ...

    def download(self, path: str, sink: BinaryIO | Any) -> None:
        """Stream the file into ``sink`` (anything with ``write``)."""

    def upload_file(self, path: str, local: Path) -> None: ...

    def upload_bytes(self, path: str, data: bytes) -> None:
        """Written whole or not at all (a reader never sees half a manifest)."""

    def delete_file(self, path: str) -> None:
        """Remove one file; a missing one is not an error."""

    def delete_folder(self, path: str) -> None: ...


def _clone_or_copy(src: Path, dst: Path) -> None:
    """``dst`` (owner-only) as a copy of ``src``: a reflink (``FICLONE``) when the file
    system can, else the kernel's copy."""
    with open(src, "rb") as fin, os.fdopen(open_file(dst), "wb") as fout:
        try:
            fcntl.ioctl(fout.fileno(), _FICLONE, fin.fileno())
            return
        except OSError:
            pass  # not the same file system, or no reflinks: copy the bytes
    copy_file(src, dst)


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:300]


class DirectoryStore:
    """Snapshots in a local (or mounted) directory. The folders and files written there
    are owner-only (``indexer.store.private``); a location that exists keeps its mode."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.where = str(root)

    def children(self) -> list[str]:
        try:
            return sorted(p.name for p in self.root.iterdir() if p.is_dir())
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise SnapshotError(f"cannot list {self.where}: {_one_line(exc)}") from exc

    def exists(self, path: str) -> bool:
        return (self.root / path).is_file()

    def read_bytes(self, path: str) -> bytes:
        try:
            return (self.root / path).read_bytes()
        except FileNotFoundError as exc:
            raise FileMissingError(f"{self.where}: {path} is missing") from exc
        except OSError as exc:
            raise SnapshotError(f"cannot read {self.root / path}: {_one_line(exc)}") from exc

    def download(self, path: str, sink: BinaryIO | Any) -> None:
        """The bytes of a regular file of the store: a symbolic link or a special file
        anywhere on the way (the snapshot's folder included) is refused, never
        followed — a snapshot must not make restore read ``/etc/passwd``."""
        try:
            with os.fdopen(self._open_regular(path), "rb") as f:
                while chunk := f.read(_GET_CHUNK):
                    sink.write(chunk)
        except FileNotFoundError as exc:
            raise FileMissingError(f"{self.where}: {path} is missing") from exc

    def _open_regular(self, path: str) -> int:
        here = self.root
        for part in path.split("/")[:-1]:
            here = here / part
            if not stat.S_ISDIR(os.lstat(here).st_mode):
                raise SnapshotCorruptError(
                    f"{self.where}: {path}: {part} is not a plain directory (links are refused)"
                )
        try:
            fd = os.open(here / path.rsplit("/", 1)[-1], os.O_RDONLY | os.O_NOFOLLOW | _O_NONBLOCK)
        except OSError as exc:
            if exc.errno != errno.ELOOP:
                raise
            raise SnapshotCorruptError(
                f"{self.where}: {path} is a symbolic link (refused)"
            ) from None
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise SnapshotCorruptError(f"{self.where}: {path} is not a regular file (refused)")
        return fd

    def upload_file(self, path: str, local: Path) -> None:
        """A copy of its own (a reflink where the file system has them, e.g. btrfs,
        XFS): never a hard link, which would share the inode of a live index file, so
        writing into the snapshot would change the data dir."""
        target = self.root / path
        make_dirs(target.parent)
        tmp = target.with_name(target.name + ".tmp")
        _clone_or_copy(local, tmp)
        os.replace(tmp, target)

    def upload_bytes(self, path: str, data: bytes) -> None:
        target = self.root / path
        make_dirs(target.parent)
        tmp = target.with_name(target.name + ".tmp")
        write_file(tmp, data, fsync=True)
        os.replace(tmp, target)

    def delete_file(self, path: str) -> None:
        (self.root / path).unlink(missing_ok=True)

    def delete_folder(self, path: str) -> None:
        shutil.rmtree(self.root / path, ignore_errors=True)


class ObjectStore:
    """Snapshots under a key prefix of an S3-compatible bucket."""

    def __init__(self, url: str, settings: S3Settings) -> None:
        from obstore.store import S3Store

        parts = urlsplit(url)
        bucket, prefix = parts.netloc, parts.path.strip("/")
        if not bucket:
            raise UnsupportedLocationError(f"{url}: no bucket (expected s3://bucket/prefix)")
        self.where = f"s3://{bucket}/{prefix}".rstrip("/")
        config: S3Config = {}
        if settings.s3_endpoint:
            config["endpoint"] = settings.s3_endpoint
        if settings.s3_region:
            config["region"] = settings.s3_region
        if settings.s3_access_key_id:
            config["access_key_id"] = settings.s3_access_key_id
        if settings.s3_secret_access_key is not None:
            config["secret_access_key"] = settings.s3_secret_access_key.get_secret_value()
        if settings.s3_session_token is not None:
            config["session_token"] = settings.s3_session_token.get_secret_value()
        endpoint = settings.s3_endpoint or os.environ.get("AWS_ENDPOINT_URL", "")
        client: ClientConfig = {"allow_http": endpoint.startswith("http://")}
        try:
            self._store: S3Store = S3Store(
                bucket, prefix=prefix or None, config=config, client_options=client
            )
        except Exception as exc:  # obstore raises its own (configuration) errors
            raise SnapshotError(f"{self.where}: {_one_line(exc)}") from exc

    def _fail(self, action: str, path: str, exc: BaseException) -> SnapshotError:
        """``FileMissingError`` when a read or delete finds nothing (a write that gets "not
        found" means the bucket is missing: a plain failure)."""
        from obstore.exceptions import NotFoundError

        if action in ("read", "delete") and isinstance(exc, NotFoundError | FileNotFoundError):
            return FileMissingError(f"{self.where}: {path or '.'} is missing")
        return SnapshotError(f"cannot {action} {self.where}/{path}: {_one_line(exc)}")

    def children(self) -> list[str]:
        import obstore

        try:
            result = obstore.list_with_delimiter(self._store, None)
        except Exception as exc:  # a missing bucket too: nothing to list is not "missing"
            raise SnapshotError(f"cannot list {self.where}: {_one_line(exc)}") from exc
        return sorted(p.rstrip("/").rsplit("/", 1)[-1] for p in result["common_prefixes"])

    def exists(self, path: str) -> bool:
        import obstore

        try:
            obstore.head(self._store, path)
        except Exception as exc:
            error = self._fail("read", path, exc)
            if isinstance(error, FileMissingError):
                return False
            raise error from exc
        return True

    def read_bytes(self, path: str) -> bytes:
        import obstore

        try:
            return bytes(obstore.get(self._store, path).bytes())
        except Exception as exc:
            raise self._fail("read", path, exc) from exc

    def download(self, path: str, sink: BinaryIO | Any) -> None:
        import obstore

        try:
            for chunk in obstore.get(self._store, path).stream(min_chunk_size=_GET_CHUNK):
                sink.write(memoryview(chunk))
        except (SnapshotError, TooLargeError):
            raise
        except Exception as exc:
            raise self._fail("read", path, exc) from exc

    def upload_file(self, path: str, local: Path) -> None:
        import obstore

        try:
            obstore.put(self._store, path, local)
        except Exception as exc:
            raise self._fail("write", path, exc) from exc

    def upload_bytes(self, path: str, data: bytes) -> None:
        import obstore

        try:
            obstore.put(self._store, path, data, use_multipart=False)
        except Exception as exc:
            raise self._fail("write", path, exc) from exc

    def delete_file(self, path: str) -> None:
        import obstore

        try:
            obstore.delete(self._store, path)
        except Exception as exc:
            error = self._fail("delete", path, exc)
            if not isinstance(error, FileMissingError):
                raise error from exc

    def _keys(self, folder: str) -> Iterator[str]:
        import obstore

        for batch in obstore.list(self._store, folder.rstrip("/") + "/"):
            for meta in batch:
                yield meta["path"]

    def delete_folder(self, path: str) -> None:
        import obstore

        try:
            keys = list(self._keys(path))
            for start in range(0, len(keys), _DELETE_BATCH):
                obstore.delete(self._store, keys[start : start + _DELETE_BATCH])
        except Exception as exc:
            raise self._fail("delete", path, exc) from exc


def open_location(location: str, s3: S3Settings) -> SnapshotStore:
    """A directory path, or ``s3://bucket/prefix``; any other URL scheme is refused."""
    parts = urlsplit(location)
    if parts.scheme == S3_SCHEME:
        return ObjectStore(location, s3)
    if parts.scheme and len(parts.scheme) > 1:  # "C:" style drive letters are paths
        raise UnsupportedLocationError(
            f"unsupported snapshot location {location!r} (a directory or s3://bucket/prefix)"
        )
    return DirectoryStore(Path(location))
