"""Small file operations the client shares: private files written atomically."""

from __future__ import annotations

import os
import secrets


def write_private_file(path: str, text: str) -> None:
    """Writes ``text`` to ``path`` with mode 0600 through a temporary file and a rename.

    A reader sees the old file or the new one, never half of it; a crash leaves at most a stray
    temporary beside it (the same as the Node SDK's writePrivateFile).
    """
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    temp = f"{path}.{secrets.token_hex(6)}.tmp"
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(fd, text.encode("utf-8"))
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, path)
    except BaseException:
        try:
            os.unlink(temp)
        except FileNotFoundError:
            pass
        raise
