"""Scanners of binary formats fed the decrypted stream: PDF action tokens, PNG and JPEG metadata.

Ports of the Node SDK's pdf.ts, fields.ts, metadata.ts, png.ts and jpeg.ts, step for step.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from typing import Literal

from .findings import Findings, format_bytes, quote
from .rules import (
    EXIF_HEADER,
    EXIF_IFD_POINTER_TAG,
    EXIF_USER_COMMENT_TAG,
    EXIF_UTF16LE_TAGS,
    JPEG_APP1_MARKER,
    JPEG_COMMENT_MARKER,
    LIMITS,
    OVERRIDE,
    PDF_TOKEN_TERMINATORS,
    PDF_TOKENS,
    PNG_TEXT_CHUNKS,
    XMP_HEADER,
)
from .text import Overlap

# --- PDF ----------------------------------------------------------------------------------------

_PDF_KEEP = max(len(t) for t in PDF_TOKENS) + 1


def _first_token(window: bytes, at_file_end: bool) -> str | None:
    """The first token followed by a name's end; the window's end counts only at the file's end."""
    first: tuple[int, bytes] | None = None
    for token in PDF_TOKENS:
        at = window.find(token)
        while at >= 0:
            if first is not None and at > first[0]:
                break
            following = at + len(token)
            if following == len(window) and not at_file_end:
                break
            if following == len(window) or window[following] in PDF_TOKEN_TERMINATORS:
                first = (at, token)
                break
            at = window.find(token, at + 1)
    return None if first is None else first[1].decode("latin-1")


class PdfTokenScanner:
    def __init__(self, findings: Findings) -> None:
        self._findings = findings
        self._overlap = Overlap(_PDF_KEEP)

    def feed(self, chunk: bytes) -> None:
        if self._findings.has("active_content"):
            return
        seam = self._overlap.seam(chunk)
        self._report(_first_token(seam, False) or _first_token(chunk, False))

    def end(self) -> None:
        if not self._findings.has("active_content"):
            self._report(_first_token(self._overlap.rest(), True))

    def _report(self, token: str | None) -> None:
        if token is not None:
            self._findings.add(
                "active_content", f"The PDF names {token}, an action that runs when the file is opened."
            )


# --- fields of length-prefixed formats ------------------------------------------------------------

FieldHandler = Callable[[bytes, int], None]


class FieldReader:
    """A stream read as consecutive fields of known length, each skipped or kept up to a bound."""

    def __init__(self) -> None:
        self._remaining = 0
        self._length = 0
        self._keep = 0
        self._kept = bytearray()
        self._handler: FieldHandler | None = None

    def expect(self, length: int, keep: int, handler: FieldHandler) -> None:
        self._remaining = length
        self._length = length
        self._keep = min(keep, length)
        self._kept = bytearray()
        self._handler = handler

    def stop(self) -> None:
        self._handler = None

    def feed(self, chunk: bytes) -> None:
        at = 0
        while self._handler is not None:
            take = min(self._remaining, len(chunk) - at)
            room = self._keep - len(self._kept)
            if room > 0:
                self._kept += chunk[at : at + min(room, take)]
            at += take
            self._remaining -= take
            if self._remaining > 0:
                return
            handler = self._handler
            self._handler = None
            handler(bytes(self._kept), self._length)


def _uint32be(data: bytes, at: int) -> int:
    return int.from_bytes(data[at : at + 4].ljust(4, b"\0"), "big")


# --- image metadata text ------------------------------------------------------------------------

_SCAN_BYTES = LIMITS["image_metadata_scan_bytes"]


def inflate_bounded(compressed: bytes) -> bytes:
    """zlib data inflated to at most the scan bound; corrupt data gives what inflated before it."""
    inflater = zlib.decompressobj()
    out = bytearray()
    try:
        for at in range(0, len(compressed), 64):
            if len(out) >= _SCAN_BYTES:
                break
            out += inflater.decompress(compressed[at : at + 64], _SCAN_BYTES - len(out))
            while inflater.unconsumed_tail and len(out) < _SCAN_BYTES:
                out += inflater.decompress(inflater.unconsumed_tail, _SCAN_BYTES - len(out))
    except zlib.error:
        pass
    return bytes(out[:_SCAN_BYTES])


def _utf16_units(text: str) -> int:
    """A string's length as JavaScript counts it."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


class MetadataText:
    def __init__(self, findings: Findings, image: str) -> None:
        self._findings = findings
        self._image = image
        self._total = 0

    def add(self, where: str, text: str, size: int) -> None:
        """A piece of metadata text, ``size`` bytes in full (the text may be cut at the bound)."""
        self._total += size
        if not self._findings.has("suspicious_metadata"):
            match = OVERRIDE.search(text)
            if match is not None:
                self._findings.add(
                    "suspicious_metadata",
                    f"The {self._image} {where} contains the override phrase {quote(match.group())}.",
                )
        limit = LIMITS["image_metadata_text_bytes"]
        if self._total > limit and not self._findings.has("large_metadata"):
            self._findings.add(
                "large_metadata", f"The {self._image} holds more than {format_bytes(limit)} of metadata text."
            )


def _latin1(data: bytes) -> str:
    return data.decode("latin-1")


def _utf8(data: bytes) -> str:
    return data.decode("utf-8", "replace")


def _utf16le(data: bytes) -> str:
    return data[: len(data) - len(data) % 2].decode("utf-16-le", "surrogatepass")


# --- PNG ------------------------------------------------------------------------------------------


def _split_nul(data: bytes) -> tuple[bytes, bytes]:
    nul = data.find(b"\0")
    return (data, b"") if nul < 0 else (data[:nul], data[nul + 1 :])


def _png_text_chunk(kind: str, data: bytes, length: int) -> tuple[str, int]:
    keyword, rest = _split_nul(data)
    if kind == "zTXt":
        text = inflate_bounded(rest[1:])
        return f"{_latin1(keyword)} {_latin1(text)}", len(keyword) + len(text)
    if kind == "iTXt":
        compressed = rest[:1] == b"\x01"
        language, after_language = _split_nul(rest[2:])
        translated, body = _split_nul(after_language)
        text = inflate_bounded(body) if compressed else body
        header = length - len(body)
        return (
            f"{_latin1(keyword)} {_latin1(language)} {_utf8(translated)} {_utf8(text)}",
            header + len(text) if compressed else length,
        )
    return f"{_latin1(keyword)} {_latin1(rest)}", length


class PngScanner:
    def __init__(self, findings: Findings) -> None:
        self._reader = FieldReader()
        self._metadata = MetadataText(findings, "PNG")
        self._reader.expect(8, 0, lambda _kept, _length: self._next_chunk())

    def feed(self, chunk: bytes) -> None:
        self._reader.feed(chunk)

    def _next_chunk(self) -> None:
        self._reader.expect(8, 8, self._chunk_header)

    def _chunk_header(self, header: bytes, _length: int) -> None:
        length = _uint32be(header, 0)
        kind = _latin1(header[4:8])
        if kind == "IEND":
            return self._reader.stop()
        if kind not in PNG_TEXT_CHUNKS:
            return self._reader.expect(length + 4, 0, lambda _k, _l: self._next_chunk())

        def text_chunk(data: bytes, _full: int) -> None:
            text, size = _png_text_chunk(kind, data, length)
            self._metadata.add(f"{kind} chunk", text, size)
            self._reader.expect(4, 0, lambda _k, _l: self._next_chunk())

        self._reader.expect(length, _SCAN_BYTES, text_chunk)


# --- JPEG -----------------------------------------------------------------------------------------

_MARKER_PREFIX = 0xFF
_START_OF_SCAN = 0xDA
_END_OF_IMAGE = 0xD9
_EXIF_TYPE_ASCII = 2


def _standalone(marker: int) -> bool:
    """Markers with no length field: TEM, RST0–RST7, SOI."""
    return marker == 0x01 or 0xD0 <= marker <= 0xD8


def _decode_exif_value(tag: int, value: bytes, little: bool) -> str:
    if tag in EXIF_UTF16LE_TAGS:
        return _utf16le(value)
    if tag == EXIF_USER_COMMENT_TAG:
        body = value[8:]
        if _latin1(value[:7]) != "UNICODE":
            return _latin1(body)
        if little:
            return _utf16le(body)
        return body[: len(body) - len(body) % 2].decode("utf-16-be", "surrogatepass")
    return _latin1(value)


def _exif_text(tiff: bytes) -> list[str]:
    """The text fields of an EXIF block: ASCII entries, UserComment and the UTF-16 XP tags."""
    if len(tiff) < 8:
        return []
    order: Literal["little", "big"] = "little" if tiff[0] == 0x49 else "big"

    def u16(at: int) -> int:
        return int.from_bytes(tiff[at : at + 2], order) if at + 2 <= len(tiff) else 0

    def u32(at: int) -> int:
        return int.from_bytes(tiff[at : at + 4], order) if at + 4 <= len(tiff) else 0

    texts: list[str] = []
    visited: set[int] = set()

    def read_ifd(offset: int) -> None:
        if offset < 8 or offset + 2 > len(tiff) or offset in visited:
            return
        visited.add(offset)
        for i in range(u16(offset)):
            entry = offset + 2 + i * 12
            if entry + 12 > len(tiff):
                return
            tag, kind, size = u16(entry), u16(entry + 2), u32(entry + 4)
            if tag == EXIF_IFD_POINTER_TAG:
                read_ifd(u32(entry + 8))
                continue
            if kind != _EXIF_TYPE_ASCII and tag != EXIF_USER_COMMENT_TAG and tag not in EXIF_UTF16LE_TAGS:
                continue
            at = entry + 8 if size <= 4 else u32(entry + 8)
            texts.append(_decode_exif_value(tag, tiff[at : min(at + size, len(tiff))], order == "little"))

    read_ifd(u32(4))
    return texts


class JpegScanner:
    def __init__(self, findings: Findings) -> None:
        self._reader = FieldReader()
        self._metadata = MetadataText(findings, "JPEG")
        self._reader.expect(2, 0, lambda _k, _l: self._next_marker())

    def feed(self, chunk: bytes) -> None:
        self._reader.feed(chunk)

    def _next_marker(self) -> None:
        def prefix(kept: bytes, _length: int) -> None:
            if kept[0] != _MARKER_PREFIX:
                return self._reader.stop()
            self._marker_code()

        self._reader.expect(1, 1, prefix)

    def _marker_code(self) -> None:
        self._reader.expect(1, 1, lambda kept, _l: self._marker(kept[0]))

    def _marker(self, marker: int) -> None:
        if marker == _MARKER_PREFIX:
            return self._marker_code()
        if marker in (_START_OF_SCAN, _END_OF_IMAGE):
            return self._reader.stop()
        if _standalone(marker):
            return self._next_marker()

        def length_field(field: bytes, _l: int) -> None:
            length = ((field[0] << 8) | field[1]) - 2
            if length < 0:
                return self._reader.stop()
            wanted = marker in (JPEG_COMMENT_MARKER, JPEG_APP1_MARKER)

            def segment(data: bytes, _full: int) -> None:
                if wanted:
                    self._segment(marker, data)
                self._next_marker()

            self._reader.expect(length, length if wanted else 0, segment)

        self._reader.expect(2, 2, length_field)

    def _segment(self, marker: int, data: bytes) -> None:
        if marker == JPEG_COMMENT_MARKER:
            self._metadata.add("comment", _latin1(data), len(data))
        elif data.startswith(EXIF_HEADER):
            texts = [t.rstrip("\0") for t in _exif_text(data[len(EXIF_HEADER) :])]
            self._metadata.add("EXIF text", "\n".join(texts), sum(_utf16_units(t) for t in texts))
        elif data.startswith(XMP_HEADER):
            xmp = data[len(XMP_HEADER) :]
            self._metadata.add("XMP packet", _utf8(xmp), len(xmp))
