"""The findings of one file: at most one per kind (the first seen), by severity then table order."""

from __future__ import annotations

import math
import re
from decimal import ROUND_HALF_UP, Decimal
from typing import TypedDict

from ..crypto import js_json_string
from .rules import KINDS, SEVERITY_OF, SEVERITY_RANK


class Finding(TypedDict):
    kind: str
    severity: str
    detail: str


class Findings:
    def __init__(self) -> None:
        self._by_kind: dict[str, Finding] = {}

    def add(self, kind: str, detail: str) -> None:
        if kind not in self._by_kind:
            self._by_kind[kind] = {"kind": kind, "severity": SEVERITY_OF[kind], "detail": detail}

    def has(self, kind: str) -> bool:
        return kind in self._by_kind

    def list(self) -> list[Finding]:
        return sorted(
            self._by_kind.values(),
            key=lambda f: (-SEVERITY_RANK[f["severity"]], KINDS.index(f["kind"])),
        )


#: JavaScript's ``\s`` (what Node's details fold), which differs from Python's.
_JS_SPACE = "\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
_JS_SPACE_RUN = re.compile(f"[{_JS_SPACE}]+")


def quote(text: str) -> str:
    """A quoted excerpt for a detail: whitespace runs as one space, at most 80 UTF-16 units."""
    flat = _JS_SPACE_RUN.sub(" ", text).strip(" ")
    units = flat.encode("utf-16-le", "surrogatepass")
    if len(units) > 160:
        flat = units[:158].decode("utf-16-le", "surrogatepass") + "…"
    return js_json_string(flat)


_UNITS = ("bytes", "KiB", "MiB", "GiB", "TiB")


def format_bytes(n: int) -> str:
    """A size for a sentence: the largest unit that states it exactly, else to one decimal."""
    unit = 0
    while unit < len(_UNITS) - 1 and n >= 1024 ** (unit + 1):
        unit += 1
    exact = unit
    while exact >= 0 and n / 1024**exact < 10_000:
        if n % (1024**exact) == 0:
            return f"{n // 1024 ** exact} {_UNITS[exact]}"
        exact -= 1
    # JavaScript's toFixed(1): the exact binary value, ties away from zero.
    value = Decimal(n / 1024**unit).quantize(Decimal("0.1"), rounding=ROUND_HALF_UP)
    return f"{value} {_UNITS[unit]}"


def js_round(value: float) -> int:
    """JavaScript's Math.round: halves go up."""
    return math.floor(value + 0.5)
