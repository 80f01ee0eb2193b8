"""Archive checks on the finished temporary file, as the Node SDK's archive.ts makes them.

A ZIP's central directory (``zipfile``) and a gzip's ISIZE trailer give the sizes the archive
declares; entries are opened, a few bytes each, to see whether they are archives themselves, and a
nested archive is extracted (bounded) beside the temporary file to look one level deeper.
"""

from __future__ import annotations

import os
import zipfile
import zlib
from collections.abc import Callable, Generator, Iterator
from contextlib import suppress

from .findings import Findings, format_bytes, js_round, quote
from .rules import LIMITS, OOXML_MACRO_ENTRY, OOXML_MARKER_ENTRY
from .types import types_by_magic

_SNIFF_BYTES = 8
_READ_BYTES = 64 * 1024

Chunks = Generator[bytes, None, None]
Opener = Callable[[], Chunks]


def archive_format_of(head: bytes) -> str | None:
    for t in types_by_magic(head):
        if t.archive is not None:
            return t.archive
    return None


def _first_bytes(chunks: Chunks, count: int) -> bytes:
    data = b""
    with suppress(Exception):  # a stream that fails early has shown what it could
        for chunk in chunks:
            data += chunk
            if len(data) >= count:
                break
    chunks.close()
    return data[:count]


def _extract_bounded(chunks: Chunks, path: str) -> bool:
    """Copies a stream to ``path``, at most the nested-extract limit; False when cut or broken."""
    written = 0
    try:
        with open(path, "wb") as out:
            for chunk in chunks:
                written += len(chunk)
                if written > LIMITS["archive_nested_extract_bytes"]:
                    return False
                out.write(chunk)
    except Exception:
        return False
    finally:
        chunks.close()
    return True


def _gunzip(path: str) -> Chunks:
    inflater = zlib.decompressobj(wbits=31)
    with open(path, "rb") as source:
        while block := source.read(_READ_BYTES):
            data = inflater.decompress(block, _READ_BYTES)
            while True:
                if data:
                    yield data
                if not inflater.unconsumed_tail:
                    break
                data = inflater.decompress(inflater.unconsumed_tail, _READ_BYTES)
            if inflater.eof and inflater.unused_data:
                # A further gzip member: its bytes follow as the tools that gunzip read them.
                rest = inflater.unused_data
                inflater = zlib.decompressobj(wbits=31)
                yield from _drain(inflater, rest)


def _drain(inflater: zlib._Decompress, data: bytes) -> Iterator[bytes]:
    out = inflater.decompress(data, _READ_BYTES)
    while out or inflater.unconsumed_tail:
        if out:
            yield out
        out = inflater.decompress(inflater.unconsumed_tail, _READ_BYTES)


def _zip_entry(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> Chunks:
    with archive.open(info) as entry:
        while block := entry.read(_READ_BYTES):
            yield block


def _raw_name(info: zipfile.ZipInfo) -> str:
    """The entry's name bytes decoded as UTF-8, as Node reads them (zipfile decodes cp437 otherwise)."""
    encoding = "utf-8" if info.flag_bits & 0x800 else "cp437"
    try:
        raw = info.orig_filename.encode(encoding)
    except UnicodeEncodeError:
        return info.orig_filename
    return raw.decode("utf-8", "replace")


class ArchiveInspector:
    """Walks an archive and its nested ones down to the depth limit, reporting the first bomb trait."""

    def __init__(self, findings: Findings, temp_path: str) -> None:
        self._findings = findings
        self._temp_path = temp_path
        self._extracted = 0
        self._opened = 0

    def inspect(self, path: str, kind: str, depth: int = 1, where: str = "the file") -> None:
        if kind == "zip":
            self._inspect_zip(path, depth, where)
        else:
            self._inspect_gzip(path, depth, where)

    def _bomb(self, detail: str) -> None:
        self._findings.add("archive_bomb", detail[:1].upper() + detail[1:])

    @property
    def _done(self) -> bool:
        return self._findings.has("archive_bomb")

    def _check_entry(self, compressed: int, uncompressed: int, subject: str) -> bool:
        ratio = uncompressed / max(compressed, 1)
        limit = LIMITS["archive_entry_ratio"]
        if uncompressed > LIMITS["archive_entry_uncompressed_bytes"] and ratio > limit:
            self._bomb(
                f"{subject} declares {format_bytes(uncompressed)} uncompressed from "
                f"{format_bytes(compressed)} ({js_round(ratio)}:1, above {limit}:1)."
            )
            return True
        return False

    def _check_total(self, total: int, where: str) -> bool:
        limit = LIMITS["archive_total_uncompressed_bytes"]
        if total > limit:
            self._bomb(
                f"{where} declares {format_bytes(total)} uncompressed in total, "
                f"above the {format_bytes(limit)} limit."
            )
            return True
        return False

    def _nested(self, kind: str, depth: int, inner_where: str, opener: Opener) -> None:
        inner = depth + 1
        max_depth = LIMITS["archive_max_depth"]
        if inner > max_depth:
            self._bomb(f"Archives nest {inner} deep ({inner_where}), above the limit of {max_depth}.")
            return
        self._extracted += 1
        path = f"{self._temp_path}.shield-{self._extracted}"
        try:
            if _extract_bounded(opener(), path):
                self.inspect(path, kind, inner, inner_where)
        finally:
            with suppress(FileNotFoundError):
                os.unlink(path)

    def _inspect_gzip(self, path: str, depth: int, where: str) -> None:
        size = os.path.getsize(path)
        if size < 4:
            return
        with open(path, "rb") as file:
            file.seek(size - 4)
            declared = int.from_bytes(file.read(4), "little")
        content = f"the gzip content of {where}"
        if self._check_total(declared, where) or self._check_entry(size, declared, content):
            return
        kind = archive_format_of(_first_bytes(_gunzip(path), _SNIFF_BYTES))
        if kind is not None:
            self._nested(kind, depth, content, lambda: _gunzip(path))

    def _inspect_zip(self, path: str, depth: int, where: str) -> None:
        try:
            archive = zipfile.ZipFile(path)
        except (zipfile.BadZipFile, OSError, ValueError, EOFError):
            return  # not a readable ZIP: nothing is declared to check
        with archive:
            total = 0
            office_file = False
            macros = False
            for info in archive.infolist():
                name = _raw_name(info)
                base = name[name.rfind("/") + 1 :]
                if name == OOXML_MARKER_ENTRY:
                    office_file = True
                if base.lower() == OOXML_MACRO_ENTRY.lower():
                    macros = True
                total += info.file_size
                entry_where = f"{quote(name)} in {where}"
                if self._check_total(total, where) or self._check_entry(
                    info.compress_size, info.file_size, f"the entry {entry_where}"
                ):
                    return
                self._check_nested_entry(archive, info, entry_where, depth)
                if self._done:
                    return
            if depth == 1 and office_file and macros:
                self._findings.add(
                    "active_content",
                    f"The Office file holds {OOXML_MACRO_ENTRY}, a VBA macro project that runs code when enabled.",
                )

    def _check_nested_entry(
        self, archive: zipfile.ZipFile, info: zipfile.ZipInfo, entry_where: str, depth: int
    ) -> None:
        encrypted = bool(info.flag_bits & 0x1)
        decodable = info.compress_type in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED)
        if encrypted or not decodable or info.compress_size == 0:
            return
        if self._opened >= LIMITS["archive_entries_opened"]:
            return
        self._opened += 1
        kind = archive_format_of(_first_bytes(_zip_entry(archive, info), _SNIFF_BYTES))
        if kind is not None:
            self._nested(kind, depth, entry_where, lambda: _zip_entry(archive, info))

