"""Text checks on the decrypted stream: override patterns, hidden characters, active markup.

The same algorithm as the Node SDK's text.ts, so that details agree to the character: the chunks
are gathered into blocks of ``BLOCK_BYTES``; each block is searched whole (its latin1 view: the
patterns are ASCII, one byte is one character), and before it its seam, the end of the earlier text
and the head of the block with whitespace runs folded to one space, so a match cut by a block
boundary or a long run of blanks is found whole. Node skips most of a block with a WebAssembly
prefilter; here a block is searched only when it holds one of the words every match contains
(found by ``bytes.find`` on the lower-cased block), which gives the same findings.
"""

from __future__ import annotations

import re

from .findings import Findings, quote
from .rules import HIDDEN_TEXT, LIMITS, MARKUP, OVERRIDE, WHITESPACE, HiddenRange

BLOCK_BYTES = 256 * 1024

_BLANK = re.escape(WHITESPACE)
_BLANK_NOT_SPACE = re.escape(WHITESPACE.replace(" ", ""))
#: The whitespace runs folding changes: two blanks or more, or one that is not a space.
_CHANGED_RUN = re.compile(f"[{_BLANK}]{{2,}}|[{_BLANK_NOT_SPACE}]")
#: Every match of an override pattern contains one of these (see prefilter.ts in the Node SDK).
_WORDS = (b"ignore", b"disregard", b"forget", b"reveal", b"print", b"show", b"mode", b"[inst", b"<|")


def _fold(text: str) -> str:
    return _CHANGED_RUN.sub(" ", text)


def folded(data: bytes, chars: int, end: str) -> str:
    """Folds the whitespace runs of ``data``'s text from ``end`` until ``chars`` folded characters."""
    span = 2 * chars
    while True:
        part = data[:span] if end == "head" else data[max(0, len(data) - span) :]
        result = _fold(part.decode("latin-1"))
        if len(result) >= chars or span >= len(data):
            return result if end == "head" else result[-chars:]
        span *= 4


def _utf8_pattern(hidden: tuple[HiddenRange, ...]) -> re.Pattern[bytes]:
    """The UTF-8 encodings of the hidden characters, as one bytes pattern."""
    alternatives = [re.escape(chr(cp).encode("utf-8")) for r in hidden for cp in range(r.start, r.end + 1)]
    return re.compile(b"|".join(alternatives))


_HIDDEN = _utf8_pattern(HIDDEN_TEXT)
_HIDDEN_LEADS = tuple({chr(r.start).encode("utf-8")[:1] for r in HIDDEN_TEXT})


def first_hidden(data: bytes) -> tuple[int, HiddenRange] | None:
    """The first hidden character in ``data`` whose encoding is complete there."""
    if not any(lead in data for lead in _HIDDEN_LEADS):
        return None
    match = _HIDDEN.search(data)
    if match is None:
        return None
    cp = ord(match.group().decode("utf-8"))
    return cp, next(r for r in HIDDEN_TEXT if r.start <= cp <= r.end)


def first_override(data: bytes) -> str | None:
    """The first match of the override patterns in the latin1 text of ``data``."""
    lowered = data.lower()
    if not any(word in lowered for word in _WORDS):
        return None
    match = OVERRIDE.search(data.decode("latin-1"))
    return None if match is None else match.group()


class Overlap:
    """The last ``keep`` bytes of what came before and the first ``keep`` of a new chunk."""

    def __init__(self, keep: int) -> None:
        self.keep = keep
        self._carry = b""

    def seam(self, chunk: bytes) -> bytes:
        seam = self._carry + chunk[: self.keep]
        after = chunk if len(chunk) > self.keep else seam
        self._carry = after[max(0, len(after) - self.keep) :]
        return seam

    def rest(self) -> bytes:
        return self._carry


class TextScanner:
    def __init__(self, findings: Findings, markup: bool) -> None:
        self._findings = findings
        self._markup = markup
        self._tail = ""
        self._hidden_bytes = Overlap(3)
        self._block = bytearray()
        self._ended = False
        override = LIMITS["override_overlap_chars"]
        self._overlap = max(LIMITS["markup_overlap_chars"], override) if markup else override

    def feed(self, chunk: bytes) -> None:
        at = 0
        while at < len(chunk) and not self._done:
            take = min(len(chunk) - at, BLOCK_BYTES - len(self._block))
            self._block += chunk[at : at + take]
            at += take
            if len(self._block) == BLOCK_BYTES:
                self._scan_gathered()

    def end(self) -> None:
        if self._ended:
            return
        if self._block and not self._done:
            self._scan_gathered()
        self._ended = True

    @property
    def _done(self) -> bool:
        has = self._findings.has
        return self._ended or (
            has("prompt_injection")
            and has("hidden_text")
            and (not self._markup or has("active_content"))
        )

    def _scan_gathered(self) -> None:
        block = bytes(self._block)
        self._block.clear()
        self._scan(block)

    def _scan(self, data: bytes) -> None:
        self._scan_hidden(data)
        # The seam first: it starts earlier in the file.
        seam = self._tail + folded(data, self._overlap, "head")
        if not self._findings.has("prompt_injection"):
            match = OVERRIDE.search(seam)
            self._report_override(None if match is None else match.group())
        if self._markup:
            self._scan_markup(seam)
        if not self._findings.has("prompt_injection"):
            self._report_override(first_override(data))
        if self._markup:
            self._scan_markup(data.decode("latin-1"))
        tail = folded(data, self._overlap, "tail")
        self._tail = (
            tail
            if len(tail) >= self._overlap
            else folded((self._tail + tail).encode("latin-1"), self._overlap, "tail")
        )

    def _scan_hidden(self, data: bytes) -> None:
        if self._findings.has("hidden_text"):
            return
        hit = first_hidden(self._hidden_bytes.seam(data)) or first_hidden(data)
        if hit is None:
            return
        cp, hidden = hit
        self._findings.add(
            "hidden_text", f"The text holds U+{cp:04X}, {hidden.label}, which readers do not show."
        )

    def _report_override(self, match: str | None) -> None:
        if match is not None:
            self._findings.add("prompt_injection", f"The text contains the override phrase {quote(match)}.")

    def _scan_markup(self, window: str) -> None:
        if self._findings.has("active_content"):
            return
        first: tuple[int, str] | None = None
        for pattern, label in MARKUP:
            match = pattern.search(window)
            if match is not None and (first is None or match.start() < first[0]):
                first = (match.start(), label)
        if first is not None:
            self._findings.add("active_content", f"The HTML or SVG holds {first[1]}.")
