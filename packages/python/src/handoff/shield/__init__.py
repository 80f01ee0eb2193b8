"""Shield: scans each received file (decisions 5.6) with the rules file the Node SDK reads.

``create_file_scan(level, name, declared_type)`` gives a scan that observes the decrypted chunks
as they are written to the temporary file, then ``finish(temp_path)`` looks at the finished file
for what needs the whole (a ZIP's central directory) and answers ``{level, verdict, findings}``.
Sans-I/O but for ``finish``, which reads the temporary file of an archive.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, TypedDict

from ..crypto import js_json_string

from .archive import ArchiveInspector, archive_format_of
from .findings import Finding, Findings
from .media import JpegScanner, PdfTokenScanner, PngScanner
from .rules import (
    DEFAULT_LEVEL,
    LEVELS,
    LIMITS,
    MAGIC_SPAN,
    SCRIPT_EXTENSIONS,
    SEVERITY_RANK,
    SHEBANG,
    SHEBANG_TEXT,
    TYPES,
    KnownType,
    threshold_of,
)
from .text import TextScanner
from .types import (
    declared_as_text,
    essence_of,
    extension_of,
    looks_like_text,
    type_by_extension,
    type_by_media_type,
    types_by_magic,
)

SHIELD_LEVELS = LEVELS
DEFAULT_SHIELD_LEVEL = DEFAULT_LEVEL


class ShieldResult(TypedDict):
    level: str
    verdict: str
    findings: list[Finding]


class ShieldLevelError(ValueError):
    pass


def parse_shield_level(text: str) -> str:
    """The level named by ``text`` (case and surrounding blanks ignored); anything else refused."""
    level = text.strip().lower()
    if level not in LEVELS:
        raise ShieldLevelError(
            f"Unknown Shield level {js_json_string(text)}: use one of {', '.join(LEVELS)}."
        )
    return level


def shield_verdict(level: str, findings: list[Finding]) -> str:
    """Blocked when a finding reaches the level's threshold, flagged when all are below, else clean."""
    threshold = threshold_of(level)
    if threshold is None:
        return "unscanned"
    if any(SEVERITY_RANK[f["severity"]] >= SEVERITY_RANK[threshold] for f in findings):
        return "blocked"
    return "flagged" if findings else "clean"


class FileScan(Protocol):
    def observe(self, chunk: bytes | memoryview) -> None:
        """Sees the file's next bytes; must not keep ``chunk``, whose buffer the caller reuses."""
        ...

    def finish(self, temp_path: str) -> ShieldResult: ...


class _ContentScanner(Protocol):
    def feed(self, chunk: bytes) -> None: ...


class _StreamingFileScan:
    """Holds the first bytes (magic numbers, the text test), then streams to the chosen scanners."""

    def __init__(self, level: str, name: str, declared_type: str | None) -> None:
        self._level = level
        self._name = name
        self._declared_type = declared_type
        self._findings = Findings()
        self._head_size = max(LIMITS["text_sniff_bytes"], MAGIC_SPAN)
        self._head = bytearray()
        self._scanners: list[_ContentScanner] | None = None
        self._magic_types: list[KnownType] = []

    def observe(self, chunk: bytes | memoryview) -> None:
        if self._scanners is not None:
            if self._scanners:
                data = bytes(chunk)  # the scanners keep slices of what they see: not of a reused buffer
                for scanner in self._scanners:
                    scanner.feed(data)
            return
        take = min(len(chunk), self._head_size - len(self._head))
        self._head += chunk[:take]
        if len(self._head) < self._head_size:
            return
        self._start_scanners(True)
        if take < len(chunk):
            self.observe(chunk[take:])

    def finish(self, temp_path: str) -> ShieldResult:
        if self._scanners is None:
            self._start_scanners(False)
        for scanner in self._scanners or []:
            end = getattr(scanner, "end", None)
            if end is not None:
                end()
        self._check_types()
        kind = archive_format_of(bytes(self._head))
        if kind is not None:
            ArchiveInspector(self._findings, temp_path).inspect(temp_path, kind)
        findings = self._findings.list()
        return {"level": self._level, "verdict": shield_verdict(self._level, findings), "findings": findings}

    def _start_scanners(self, file_continues: bool) -> None:
        head = bytes(self._head)
        self._magic_types = types_by_magic(head)
        named = [t for _, t in self._claims()]

        def is_(test: Callable[[KnownType], bool]) -> bool:
            return any(test(t) for t in self._magic_types) or any(test(t) for t in named)

        scanners: list[_ContentScanner] = []
        text = declared_as_text(essence_of(self._declared_type)) or looks_like_text(head, file_continues)
        if text:
            decoded = head.decode("utf-8", "replace")
            markup = is_(lambda t: t.markup_sniff is not None) or any(
                t.markup_sniff is not None and t.markup_sniff.search(decoded) is not None for t in TYPES
            )
            scanners.append(TextScanner(self._findings, markup))
        if is_(lambda t: t.pdf):
            scanners.append(PdfTokenScanner(self._findings))
        if any(t.image_metadata == "png" for t in self._magic_types):
            scanners.append(PngScanner(self._findings))
        if any(t.image_metadata == "jpeg" for t in self._magic_types):
            scanners.append(JpegScanner(self._findings))
        self._scanners = scanners
        for scanner in scanners:
            scanner.feed(head)

    def _claims(self) -> list[tuple[str, KnownType]]:
        """The known types the name's extension and the declared type name, with what named each."""
        extension = extension_of(self._name)
        essence = essence_of(self._declared_type)
        claims = [
            (f"the name ({extension})", type_by_extension(extension)),
            (f"the declared type ({essence})", type_by_media_type(essence)),
        ]
        return [(by, t) for by, t in claims if t is not None]

    def _check_types(self) -> None:
        """disguised_executable, executable, type_mismatch and script."""
        claims = [(by, t) for by, t in self._claims() if t.category != "executable"]
        executable = next((t for t in self._magic_types if t.category == "executable"), None)
        if executable is not None:
            if claims:
                by, claimed = claims[0]
                self._findings.add(
                    "disguised_executable",
                    f"The bytes are a native executable ({executable.name}) while {by} says {claimed.name}.",
                )
            else:
                self._findings.add("executable", f"The bytes are a native executable ({executable.name}).")
        elif self._magic_types:
            mismatch = next(((by, t) for by, t in claims if t not in self._magic_types), None)
            if mismatch is not None:
                self._findings.add(
                    "type_mismatch",
                    f"The bytes are {self._magic_types[0].name} while {mismatch[0]} says {mismatch[1].name}.",
                )
        extension = extension_of(self._name)
        if bytes(self._head).startswith(SHEBANG):
            self._findings.add("script", f"The file starts with {SHEBANG_TEXT}, a script for an interpreter.")
        elif extension in SCRIPT_EXTENSIONS:
            self._findings.add("script", f"The name's extension {extension} is that of a script.")


class _Unscanned:
    """``off`` reads no byte."""

    def observe(self, chunk: bytes | memoryview) -> None:
        pass

    def finish(self, temp_path: str) -> ShieldResult:
        return {"level": "off", "verdict": "unscanned", "findings": []}


def create_file_scan(level: str, name: str, declared_type: str | None) -> FileScan:
    if level not in LEVELS:
        raise ShieldLevelError(f"Unknown Shield level {js_json_string(level)}: use one of {', '.join(LEVELS)}.")
    if threshold_of(level) is None:
        return _Unscanned()
    return _StreamingFileScan(level, name, declared_type)


__all__ = [
    "DEFAULT_SHIELD_LEVEL",
    "SHIELD_LEVELS",
    "FileScan",
    "Finding",
    "ShieldLevelError",
    "ShieldResult",
    "create_file_scan",
    "parse_shield_level",
    "shield_verdict",
]
