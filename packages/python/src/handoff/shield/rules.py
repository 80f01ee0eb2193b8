"""The Shield rules file, the very one the Node SDK reads (packages/sdk/src/shield/rules.json).

Every decision Shield takes reads a value from it, so both clients decide alike; this module only
turns the data into lookups and compiled patterns (``re.IGNORECASE | re.ASCII``, as the file says).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: In a checkout: packages/python/src/handoff/shield → packages/sdk/src/shield/rules.json.
_CHECKOUT_RULES = Path(__file__).resolve().parents[4] / "sdk" / "src" / "shield" / "rules.json"
RULES_PATH = Path(os.environ.get("HANDOFF_SHIELD_RULES") or _CHECKOUT_RULES)
_FORMAT = "handoff-shield-rules/1"


def _load() -> dict[str, Any]:
    try:
        with open(RULES_PATH, encoding="utf-8") as file:
            data: dict[str, Any] = json.load(file)
    except OSError as error:
        raise RuntimeError(
            f"Shield's rules file {RULES_PATH} cannot be read ({error.strerror}); "
            "set HANDOFF_SHIELD_RULES to packages/sdk/src/shield/rules.json of a Handoff checkout"
        ) from None
    if data.get("format") != _FORMAT:
        raise RuntimeError(f"{RULES_PATH} is not a {_FORMAT} file")
    return data


DATA = _load()
_FLAGS = re.IGNORECASE | re.ASCII


def caseless(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, _FLAGS)


@dataclass(frozen=True)
class KnownType:
    id: str
    name: str
    category: str
    #: Alternatives; each a list of (offset, bytes) that must all match.
    magic: tuple[tuple[tuple[int, bytes], ...], ...]
    extensions: tuple[str, ...]
    media_types: tuple[str, ...]
    archive: str | None
    pdf: bool
    image_metadata: str | None
    markup_sniff: re.Pattern[str] | None


def _known_type(t: dict[str, Any]) -> KnownType:
    sniff = t.get("markup_sniff")
    return KnownType(
        id=t["id"],
        name=t["name"],
        category=t["category"],
        magic=tuple(
            tuple((part["offset"], bytes.fromhex(part["hex"])) for part in alternative)
            for alternative in t["magic"]
        ),
        extensions=tuple(t["extensions"]),
        media_types=tuple(t["media_types"]),
        archive=t.get("archive"),
        pdf=bool(t.get("pdf", False)),
        image_metadata=t.get("image_metadata"),
        markup_sniff=None if sniff is None else caseless(sniff),
    )


@dataclass(frozen=True)
class HiddenRange:
    start: int
    end: int
    label: str


LEVELS: tuple[str, ...] = tuple(DATA["levels"])
DEFAULT_LEVEL: str = DATA["default_level"]
LIMITS: dict[str, int] = DATA["limits"]
KINDS: tuple[str, ...] = tuple(k["kind"] for k in DATA["kinds"])
SEVERITY_OF: dict[str, str] = {k["kind"]: k["severity"] for k in DATA["kinds"]}
SEVERITY_RANK: dict[str, int] = {s: i for i, s in enumerate(DATA["severities"])}
TYPES: tuple[KnownType, ...] = tuple(_known_type(t) for t in DATA["types"])
TEXT_MEDIA_TYPES: tuple[str, ...] = tuple(DATA["text"]["media_types"])
WHITESPACE: str = DATA["text"]["whitespace"]
#: All override patterns as one alternation, so a text is searched in a single pass.
OVERRIDE = caseless("|".join(f"(?:{p})" for p in DATA["override_patterns"]))
HIDDEN_TEXT: tuple[HiddenRange, ...] = tuple(
    HiddenRange(int(r["from"], 16), int(r["to"], 16), r["label"]) for r in DATA["hidden_text"]
)
SHEBANG: bytes = DATA["script"]["shebang"].encode("latin-1")
SHEBANG_TEXT: str = DATA["script"]["shebang"]
SCRIPT_EXTENSIONS: tuple[str, ...] = tuple(DATA["script"]["extensions"])
_ACTIVE = DATA["active_content"]
PDF_TOKENS: tuple[bytes, ...] = tuple(t.encode("latin-1") for t in _ACTIVE["pdf_tokens"])
PDF_TOKEN_TERMINATORS: frozenset[int] = frozenset(_ACTIVE["pdf_token_terminators"].encode("latin-1"))
MARKUP: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (caseless(m["pattern"]), m["label"]) for m in _ACTIVE["markup_patterns"]
)
OOXML_MARKER_ENTRY: str = _ACTIVE["ooxml_marker_entry"]
OOXML_MACRO_ENTRY: str = _ACTIVE["ooxml_macro_entry"]
_IMAGE = DATA["image_metadata"]
PNG_TEXT_CHUNKS: tuple[str, ...] = tuple(_IMAGE["png_text_chunks"])
JPEG_COMMENT_MARKER = int(_IMAGE["jpeg_comment_marker"], 16)
JPEG_APP1_MARKER = int(_IMAGE["jpeg_app1_marker"], 16)
EXIF_HEADER = bytes.fromhex(_IMAGE["exif_header"])
XMP_HEADER = bytes.fromhex(_IMAGE["xmp_header"])
EXIF_IFD_POINTER_TAG = int(_IMAGE["exif_ifd_pointer_tag"], 16)
EXIF_USER_COMMENT_TAG = int(_IMAGE["exif_user_comment_tag"], 16)
EXIF_UTF16LE_TAGS: tuple[int, ...] = tuple(int(t, 16) for t in _IMAGE["exif_utf16le_tags"])


def threshold_of(level: str) -> str | None:
    """The lowest severity a level blocks, or None for ``off``."""
    value: str | None = DATA["levels"][level]
    return value


#: The longest offset + length any magic number needs: at least this many first bytes are held.
MAGIC_SPAN = max(
    offset + len(data) for t in TYPES for alternative in t.magic for offset, data in alternative
)
