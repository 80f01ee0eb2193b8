"""Progress bars on stderr, and only when stderr is a terminal (decisions 5.5).

The line is the Node CLI's (src/client/progress.ts): ``{file} [{bar}] {percent}% {done}/{total} MiB
{speed} {left}``, with the speed over the last five seconds and the time left at that speed
(decisions 7.2).
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable
from typing import TextIO

from .sending import ProgressCallback
from .terminal import terminal_safe

_MIB = 1024 * 1024
#: Narrower than a plain bar: with the speed and the time left, a line still fits 80 columns.
_BAR_WIDTH = 20
_REDRAW_SECONDS = 0.1
#: How far back the speed looks: long enough to be steady, short enough to follow a change.
SPEED_WINDOW_SECONDS = 5.0

Clock = Callable[[], float]


def speed_meter(now: Clock = time.monotonic) -> Callable[[int], float | None]:
    """A file's speed in bytes per second over the last SPEED_WINDOW_SECONDS of its progress (None
    before there are two points in time); progress that goes back (an upload resumed from the
    server's offset) starts the measure again."""
    samples: deque[tuple[float, int]] = deque()

    def measure(done: int) -> float | None:
        at = now()
        if samples and done < samples[-1][1]:
            samples.clear()
        samples.append((at, done))
        while len(samples) > 2 and at - samples[1][0] >= SPEED_WINDOW_SECONDS:
            samples.popleft()
        first_at, first_done = samples[0]
        return (done - first_done) / (at - first_at) if at > first_at else None

    return measure


def speed_text(bytes_per_second: float | None) -> str:
    """``12.3 MiB/s``, or ``-- MiB/s`` while there is no speed yet."""
    return "-- MiB/s" if bytes_per_second is None else f"{bytes_per_second / _MIB:.1f} MiB/s"


def time_left_text(remaining: int, bytes_per_second: float | None) -> str:
    """``0:42 left``, ``1:02:03 left``; ``--:-- left`` while the speed is unknown or nothing moves."""
    if remaining <= 0:
        return "0:00 left"
    if not bytes_per_second or bytes_per_second <= 0:
        return "--:-- left"
    seconds = math.ceil(remaining / bytes_per_second)
    hours, minutes, rest = seconds // 3600, seconds // 60 % 60, seconds % 60
    return f"{hours}:{minutes:02d}:{rest:02d} left" if hours else f"{minutes}:{rest:02d} left"


def progress_line(file: str, done: int, total: int, bytes_per_second: float | None) -> str:
    """One file's line, as cli-progress draws the Node CLI's (percent floored, bar rounded)."""
    share = min(max(done / total, 0.0), 1.0) if total else 1.0
    filled = math.floor(share * _BAR_WIDTH + 0.5)
    bar = "█" * filled + "░" * (_BAR_WIDTH - filled)
    return (
        f"{terminal_safe(file)} [{bar}] {math.floor(share * 100)}% {done / _MIB:.1f}/{total / _MIB:.1f} MiB "
        f"{speed_text(bytes_per_second)} {time_left_text(total - done, bytes_per_second)}"
    )


class ProgressBars:
    """One line per file, redrawn at most ten times a second; nothing at all without a terminal."""

    def __init__(self, stream: TextIO, now: Clock = time.monotonic) -> None:
        self._stream = stream
        self._now = now
        self._current: str | None = None
        self._speed = speed_meter(now)
        self._drawn = 0.0
        self.on_progress: ProgressCallback | None = self._update if stream.isatty() else None

    def __enter__(self) -> ProgressBars:
        return self

    def __exit__(self, *_: object) -> None:
        if self._current is not None:
            self._stream.write("\n")
            self._stream.flush()

    def _update(self, file: str, done: int, total: int) -> None:
        if file != self._current:
            if self._current is not None:
                self._stream.write("\n")
            self._current, self._speed, self._drawn = file, speed_meter(self._now), -math.inf
        now = self._now()
        if done < total and now - self._drawn < _REDRAW_SECONDS:
            return
        self._drawn = now
        # Measured at each redraw only: ten points a second are plenty for a five-second window.
        # The line is drawn over the last one and what is left of it erased (ESC [ K).
        self._stream.write(f"\r{progress_line(file, done, total, self._speed(done))}\x1b[K")
        self._stream.flush()
