"""What a file is: by its first bytes, its name and its declared media type (the rules' ``types``)."""

from __future__ import annotations

import codecs

from .rules import TEXT_MEDIA_TYPES, TYPES, KnownType


def _matches_at(head: bytes, offset: int, data: bytes) -> bool:
    return head[offset : offset + len(data)] == data


def types_by_magic(head: bytes) -> list[KnownType]:
    """Every known type whose magic number the first bytes carry (a ZIP header fits several)."""
    return [
        t
        for t in TYPES
        if any(all(_matches_at(head, offset, data) for offset, data in alt) for alt in t.magic)
    ]


def extension_of(name: str) -> str:
    """The name's last extension, lower case with its dot ("" when it has none)."""
    base = name[name.rfind("/") + 1 :]
    dot = base.rfind(".")
    return "" if dot <= 0 else base[dot:].lower()


def essence_of(media_type: str | None) -> str:
    """The media type without parameters, lower case ("" when absent)."""
    return (media_type or "").split(";")[0].strip().lower()


def type_by_extension(extension: str) -> KnownType | None:
    if extension == "":
        return None
    return next((t for t in TYPES if extension in t.extensions), None)


def type_by_media_type(essence: str) -> KnownType | None:
    if essence == "":
        return None
    return next((t for t in TYPES if essence in t.media_types), None)


def _media_type_matches(pattern: str, essence: str) -> bool:
    star = pattern.find("*")
    if star < 0:
        return pattern == essence
    prefix, suffix = pattern[:star], pattern[star + 1 :]
    return len(essence) > len(pattern) - 1 and essence.startswith(prefix) and essence.endswith(suffix)


def declared_as_text(essence: str) -> bool:
    return essence != "" and any(_media_type_matches(p, essence) for p in TEXT_MEDIA_TYPES)


def looks_like_text(head: bytes, file_continues: bool) -> bool:
    """Valid UTF-8 without NUL; a character cut at the edge is allowed when the file goes on."""
    if b"\0" in head:
        return False
    try:
        codecs.getincrementaldecoder("utf-8")("strict").decode(head, final=not file_continues)
    except UnicodeDecodeError:
        return False
    return True
