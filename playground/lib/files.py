"""Every stored file (speech clips, chat attachments, voices, batch files, frozen share files, the local API's
files) goes through Django's default storage, by name: the local disk under MEDIA_ROOT by default, or an
S3-compatible bucket shared by every server (PLAYGROUND_S3_BUCKET, docs/operations.md, "Files").

Two things the storage API alone does not give:
- reading a part of a file without fetching all of it (`open_stream`: a download with Range, or audio played from
  the middle, reads only those bytes from the bucket);
- a file written bit by bit while others read it (a clip as it arrives, a batch's result journal): `Spool` writes
  it to a local file and publishes it to the storage when it is complete. On the local disk the spool *is* the
  stored file, so nothing is copied.
"""

import io
import shutil
from pathlib import Path
from typing import BinaryIO

from django.conf import settings
from django.core.files import File
from django.core.files.storage import storages
from storages.backends.s3 import S3Storage as BaseS3Storage
from storages.utils import clean_name


def storage():
    return storages["default"]


def location() -> str:
    """Where the stored files are, written the same by every server that shares them: `s3://<bucket>/<prefix>` or
    `file://<MEDIA_ROOT>`. Background work that reads files another process wrote (a local batch) is taken only by
    a process whose files are in the same place: one on another storage would find none of them."""
    store = storage()
    if isinstance(store, BaseS3Storage):
        return f"s3://{store.bucket_name}/{store.location}"
    return f"file://{store.location}"


def size(name: str) -> int | None:
    """The stored file's size in bytes, or None when there is no such file."""
    if not name:
        return None
    try:
        return storage().size(name)
    except (FileNotFoundError, NotADirectoryError):
        return None


def open_stream(name: str) -> BinaryIO:
    """The stored file for reading, seekable, fetching only the bytes read (FileNotFoundError when missing)."""
    store = storage()
    if isinstance(store, S3Storage):
        return store.open_stream(name)
    return store.open(name, "rb")


def read(name: str) -> bytes:
    with open_stream(name) as handle:
        return handle.read()


def save(name: str, content: BinaryIO | bytes) -> str:
    """Store `content` under `name` (or a free name near it); returns the name it was stored under."""
    if isinstance(content, bytes):
        content = io.BytesIO(content)
    return storage().save(name, File(content, name=Path(name).name))


def delete(name: str) -> None:
    if name:
        storage().delete(name)


def local_path(name: str) -> Path | None:
    """Where the stored file lives on this machine's disk, or None when the storage is not a local directory."""
    try:
        return Path(storage().path(name))
    except NotImplementedError:
        return None


class Spool:
    """A stored file written bit by bit: write to `path`, then `publish()` it (or `discard()` it, or `abandon()`
    it to the process that took the writing over).

    With `resume`, the file starts as what is stored under `name` (a journal taken over by another process).
    Readers in this process read `path` while it grows; readers elsewhere see the file once it is published.
    """

    def __init__(self, name: str, *, resume: bool = False):
        self.name = name
        direct = local_path(name)
        self.direct = direct is not None
        self.path = direct or _spool_path(name)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if resume and not self.direct and size(name) is not None:
            with open_stream(name) as source, open(self.path, "wb") as target:
                shutil.copyfileobj(source, target)

    def publish(self) -> None:
        if self.direct:
            return
        store = storage()
        with open(self.path, "rb") as handle:
            # The bucket overwrites an object of the same name (AWS_S3_FILE_OVERWRITE, on by default).
            stored = store.save(self.name, File(handle, name=self.path.name))
        if stored != self.name:
            store.delete(stored)
            raise RuntimeError(f"The storage renamed {self.name} to {stored}: it must overwrite files")
        self.path.unlink(missing_ok=True)

    def abandon(self) -> None:
        """Stop without storing: the stored file stays as it is (another process writes it now)."""
        if not self.direct:
            self.path.unlink(missing_ok=True)

    def discard(self) -> None:
        self.path.unlink(missing_ok=True)
        if not self.direct:
            delete(self.name)


def spooled(name: str) -> Path | None:
    """The local spool of a file still being written in this process (None once published, or elsewhere)."""
    if local_path(name) is not None:
        return None
    path = _spool_path(name)
    return path if path.exists() else None


def _spool_path(name: str) -> Path:
    return Path(settings.DATA_DIR) / "spool" / clean_name(name)


class S3Storage(BaseS3Storage):
    """django-storages' S3 storage, plus reads that fetch only what is read (its own files download whole)."""

    def open_stream(self, name: str) -> BinaryIO:
        length = self.size(name)  # FileNotFoundError when there is no such object
        return _RangeReader(
            self.connection.meta.client, self.bucket_name, self._normalize_name(clean_name(name)), length
        )


class _RangeReader(io.RawIOBase):
    """A bucket object as a seekable file: each read after a seek is one GET with `Range: bytes=<position>-`,
    read from the network as it is consumed (closing it early stops the transfer)."""

    def __init__(self, client, bucket: str, key: str, length: int):
        self._client, self._bucket, self._key = client, bucket, key
        self._length = length
        self._position = 0
        self._body = None

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        offset += {io.SEEK_SET: 0, io.SEEK_CUR: self._position, io.SEEK_END: self._length}[whence]
        if offset != self._position:
            self._drop()
            self._position = offset
        return self._position

    def read(self, size: int = -1) -> bytes:
        if self._position >= self._length:
            return b""
        if self._body is None:
            try:
                self._body = self._client.get_object(
                    Bucket=self._bucket, Key=self._key, Range=f"bytes={self._position}-"
                )["Body"]
            except self._client.exceptions.ClientError as exc:
                if exc.response.get("Error", {}).get("Code") == "InvalidRange":
                    return b""  # at or past the end
                raise
        data = self._body.read(None if size is None or size < 0 else size)
        self._position += len(data)
        return data

    def readall(self) -> bytes:
        return self.read(-1)

    def readinto(self, buffer) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def _drop(self) -> None:
        if self._body is not None:
            self._body.close()
            self._body = None

    def close(self) -> None:
        self._drop()
        super().close()
