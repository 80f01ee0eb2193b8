"""The sender's file system as the I/O shell reads it before a flow runs (``os.stat``, ``os.walk``).

The sending flows (sending.py) take what is found here as arguments and never look at the disk
themselves, except to read a file's bytes as its upload streams: the files a send names, and the
state of the files a resumed send finds now.
"""

from __future__ import annotations

import errno
import mimetypes
import os
import stat
from dataclasses import dataclass

from .errors import HandoffError

MAX_NAME_BYTES = 255
MAX_PATH_BYTES = 1024
MAX_SEGMENTS = 32
_MEDIA_TYPES = mimetypes.MimeTypes()


@dataclass
class LocalFile:
    path: str
    #: The name sent: the base name, or the path relative to a sent folder's parent (7.3).
    name: str
    type: str
    size: int
    #: When the send began, in milliseconds (as Node's mtimeMs): a resumed send refuses a changed file.
    modified_ms: float


@dataclass(frozen=True)
class FileState:
    """What a resumed send compares with the state it kept: is it still the same regular file?"""

    regular: bool
    size: int
    modified_ms: float


def media_type_of(name: str) -> str:
    return _MEDIA_TYPES.guess_type(name, strict=False)[0] or "application/octet-stream"


def file_state(path: str) -> FileState | None:
    """The file at ``path`` now, or None when there is none."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return FileState(stat.S_ISREG(info.st_mode), info.st_size, info.st_mtime_ns / 1e6)


def _local_file(path: str, name: str) -> LocalFile:
    if len(name.encode("utf-8")) > MAX_PATH_BYTES or any(
        len(segment.encode("utf-8")) > MAX_NAME_BYTES for segment in name.split("/")
    ):
        raise HandoffError("INVALID_FILE_NAME", f"the name of {path} is over {MAX_NAME_BYTES} bytes")
    info = os.stat(path)
    return LocalFile(os.path.abspath(path), name, media_type_of(name), info.st_size, info.st_mtime_ns / 1e6)


def _folder_files(folder: str) -> list[LocalFile]:
    """The regular files under ``folder``, hidden ones included, symbolic links skipped (7.3)."""
    parent = os.path.dirname(os.path.abspath(folder).rstrip(os.sep)) or os.sep
    found: list[LocalFile] = []
    for root, dirs, names in os.walk(folder, followlinks=False):
        dirs.sort()
        for name in sorted(names):
            path = os.path.join(root, name)
            if os.path.islink(path) or not os.path.isfile(path):
                continue
            relative = os.path.relpath(os.path.abspath(path), parent).replace(os.sep, "/")
            if relative.count("/") + 1 > MAX_SEGMENTS:
                raise HandoffError("INVALID_FILE_NAME", f"{path} is more than {MAX_SEGMENTS} folders deep")
            found.append(_local_file(path, relative))
    return found


def local_files(paths: list[str]) -> list[LocalFile]:
    """Each path as the files it sends: a regular file, or the files of a folder."""
    files: list[LocalFile] = []
    for path in paths:
        try:
            info = os.stat(path)
        except OSError as error:
            code = errno.errorcode.get(error.errno or 0, str(error))
            raise HandoffError("FILE_NOT_FOUND", f"cannot read {path}: {code}") from None
        if stat.S_ISDIR(info.st_mode):
            files.extend(_folder_files(path))
        elif not stat.S_ISREG(info.st_mode):
            raise HandoffError("NOT_A_FILE", f"{path} is not a regular file")
        else:
            files.append(_local_file(path, os.path.basename(path)))
    return files
