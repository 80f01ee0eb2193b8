"""Text a sender or a server controls, made safe to print on a terminal (as src/client/terminal-text.ts).

Every character a terminal would act on (C0 and C1 controls, DEL, the bidirectional marks,
embeddings, overrides and isolates that reorder what the reader sees) is written as ``\\uXXXX``,
the way JSON shows it; every client line bound for stdout or stderr goes through here, so the
Python CLI prints what the Node CLI prints.
"""

from __future__ import annotations

_BIDI = {0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)}


def _acts_on_terminal(code: int) -> bool:
    return code < 0x20 or 0x7F <= code <= 0x9F or code in _BIDI


def terminal_safe(text: str, *, keep_newlines: bool = False) -> str:
    """``text`` with what a terminal would act on escaped; ``keep_newlines`` keeps line breaks."""
    return "".join(
        f"\\u{ord(char):04x}" if _acts_on_terminal(ord(char)) and not (keep_newlines and char == "\n") else char
        for char in text
    )
