"""The offline check of an audit export (decisions 9.7), as ``handoff log verify`` runs it.

An export is NDJSON: first ``{"checkpoint": <signed note>}``, then one ``{"leaf_index", "entry",
"inclusion"}`` per entry in log order, every proof against that one checkpoint. Checked line by
line, so a file of any length streams through: the checkpoint signed by the log key, each entry's
inclusion proof against its root (the leaf being the entry's RFC 8785 bytes), leaves and positions
rising, and each receipt's signature against the recipient's signing key as the export's own key
entries (``AgentConnected`` in the agent's stream, the newest before the receipt) show it. A receipt
whose signer has no key entry in the export (another account's agent) is counted as unchecked, never
as verified. The same check as the Node SDK's ``ExportCheck``, with the same summary.
"""

from __future__ import annotations

import json
from typing import Any, TypedDict

from .crypto import from_base64, to_base64
from .errors import HandoffCryptoError
from .transparency import (
    Checkpoint,
    TransparencyError,
    VerifierKey,
    canonical_json,
    ed25519_valid,
    leaf_hash,
    open_checkpoint,
    verify_inclusion,
)

KEY_ENTRY = "AgentConnected"
RECEIPT_ENTRY = "ReceiptRecorded"


class ExportSummary(TypedDict):
    ok: bool
    origin: str | None
    tree_size: int
    root: str | None
    entries: int
    streams: int
    first_leaf: int | None
    last_leaf: int | None
    key_entries: int
    #: Receipts whose signature verified against a key entry of the export.
    receipts_verified: int
    #: Receipts by an agent whose key entry is not in this export: unverifiable here.
    receipts_unchecked: int


class ExportProblem(Exception):
    """The first thing wrong with an export, and its line (1-based)."""

    def __init__(self, line: int, problem: str) -> None:
        super().__init__(f"line {line}: {problem}")
        self.line = line


def _is_entry_line(value: Any) -> bool:
    if not isinstance(value, dict):
        return False
    index, entry, inclusion = value.get("leaf_index"), value.get("entry"), value.get("inclusion")
    return (
        isinstance(index, int)
        and not isinstance(index, bool)
        and index >= 0
        and isinstance(inclusion, list)
        and all(isinstance(hash_, str) for hash_ in inclusion)
        and isinstance(entry, dict)
        and all(isinstance(entry.get(field), str) for field in ("position", "type", "stream", "at"))
        and isinstance(entry.get("data"), dict)
    )


class ExportCheck:
    """Feed it each line with ``line``; ``finish`` answers the summary. Raises ExportProblem."""

    def __init__(self, key: VerifierKey) -> None:
        self._key = key
        self._line = 0
        self._opened = False
        self._checkpoint: Checkpoint | None = None
        self._entries = 0
        self._first_leaf: int | None = None
        self._last_leaf = -1
        self._last_position = ""
        self._streams: set[str] = set()
        #: Each agent stream's signing key as its newest key entry so far set it.
        self._signing_keys: dict[str, str | None] = {}
        self._key_entries = 0
        self._receipts_verified = 0
        self._receipts_unchecked = 0

    def _problem(self, text: str) -> ExportProblem:
        return ExportProblem(self._line, text)

    def line(self, text: str) -> None:
        self._line += 1
        if not text.strip():
            raise self._problem("an empty line")
        try:
            parsed = json.loads(text)
        except ValueError:
            raise self._problem("not JSON") from None
        if self._opened:
            self._entry(parsed)
        else:
            self._open(parsed)

    def finish(self) -> ExportSummary:
        if not self._opened:
            raise ExportProblem(1, "the export is empty: no checkpoint line")
        checkpoint = self._checkpoint
        return {
            "ok": True,
            "origin": checkpoint.origin if checkpoint else None,
            "tree_size": checkpoint.size if checkpoint else 0,
            "root": to_base64(checkpoint.root) if checkpoint else None,
            "entries": self._entries,
            "streams": len(self._streams),
            "first_leaf": self._first_leaf,
            "last_leaf": self._last_leaf if self._entries else None,
            "key_entries": self._key_entries,
            "receipts_verified": self._receipts_verified,
            "receipts_unchecked": self._receipts_unchecked,
        }

    def _open(self, parsed: Any) -> None:
        note = parsed.get("checkpoint", ...) if isinstance(parsed, dict) else ...
        self._opened = True
        if note is None:
            return  # a log with nothing signed yet exports no checkpoint, and so no entry
        if not isinstance(note, str):
            raise self._problem('the first line is not {"checkpoint": <signed note>}')
        try:
            self._checkpoint = open_checkpoint(note, self._key)
        except TransparencyError as error:
            raise self._problem(f"the checkpoint is not the log's: {error}") from None

    def _entry(self, parsed: Any) -> None:
        if not _is_entry_line(parsed):
            raise self._problem("not an entry line {leaf_index, entry, inclusion}")
        checkpoint = self._checkpoint
        if checkpoint is None:
            raise self._problem("an entry, yet the export has no checkpoint")
        index: int = parsed["leaf_index"]
        entry: dict[str, Any] = parsed["entry"]
        position: str = entry["position"]
        if index >= checkpoint.size:
            raise self._problem(f"leaf {index} is beyond the checkpoint's {checkpoint.size}")
        if index <= self._last_leaf:
            raise self._problem(f"leaf {index} comes after leaf {self._last_leaf}: out of order")
        # Positions are fixed-width text, so that text order is log order (as the Node check compares).
        if position <= self._last_position:
            raise self._problem(f"position {position} comes after {self._last_position}: out of order")
        try:
            proof = [from_base64(hash_) for hash_ in parsed["inclusion"]]
            leaf = leaf_hash(canonical_json(entry))
            verify_inclusion(index, checkpoint.size, leaf, proof, checkpoint.root)
        except (TransparencyError, HandoffCryptoError):
            raise self._problem(
                f"leaf {index} ({entry['type']} at {position}) is not in the signed tree"
            ) from None
        self._entries += 1
        if self._first_leaf is None:
            self._first_leaf = index
        self._last_leaf = index
        self._last_position = position
        self._streams.add(entry["stream"])
        if entry["type"] == KEY_ENTRY:
            signing = entry["data"].get("signingPublicKey")
            self._signing_keys[entry["stream"]] = signing if isinstance(signing, str) else None
            self._key_entries += 1
        elif entry["type"] == RECEIPT_ENTRY:
            self._receipt(position, entry["data"])

    def _receipt(self, position: str, data: dict[str, Any]) -> None:
        receipt = data.get("receipt")
        signature = data.get("signature")
        recipient = receipt.get("recipient") if isinstance(receipt, dict) else None
        if not isinstance(recipient, str) or not isinstance(signature, str):
            raise self._problem(f"the receipt at {position} has no recipient or signature")
        stream = f"agent-{recipient}"
        if stream not in self._signing_keys:
            self._receipts_unchecked += 1
            return
        key = self._signing_keys[stream]
        if key is None:
            raise self._problem(f"the receipt at {position} is by agent {recipient}, who has no signing key")
        try:
            valid = ed25519_valid(from_base64(key), from_base64(signature), canonical_json(receipt))
        except (TransparencyError, HandoffCryptoError):
            valid = False
        if not valid:
            raise self._problem(f"the receipt at {position} is not signed by agent {recipient}'s key")
        self._receipts_verified += 1
