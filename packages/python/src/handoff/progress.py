"""Progress bars on stderr, and only when stderr is a terminal (decisions 5.5)."""

from __future__ import annotations

import time
from typing import TextIO

from .sending import ProgressCallback

_MIB = 1024 * 1024
_WIDTH = 30
_REDRAW_SECONDS = 0.1


class ProgressBars:
    """One line per file, redrawn at most ten times a second; nothing at all without a terminal."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._current: str | None = None
        self._drawn = 0.0
        self.on_progress: ProgressCallback | None = self._update if stream.isatty() else None

    def __enter__(self) -> ProgressBars:
        return self

    def __exit__(self, *_: object) -> None:
        if self._current is not None:
            self._stream.write("\n")
            self._stream.flush()

    def _update(self, file: str, done: int, total: int) -> None:
        now = time.monotonic()
        finished = done >= total
        if file == self._current and not finished and now - self._drawn < _REDRAW_SECONDS:
            return
        if self._current is not None and file != self._current:
            self._stream.write("\n")
        self._current = file
        self._drawn = now
        share = done / total if total else 1.0
        bar = "█" * int(share * _WIDTH) + "░" * (_WIDTH - int(share * _WIDTH))
        self._stream.write(f"\r{file} [{bar}] {int(share * 100)}% {done / _MIB:.1f}/{total / _MIB:.1f} MiB")
        self._stream.flush()
