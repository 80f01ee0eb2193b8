"""The offline check of an audit export (decisions 9.7), as ``handoff log verify`` runs it.

An export is NDJSON: first ``{"checkpoint": <signed note>}``, then one ``{"leaf_index", "entry",
"inclusion"}`` per entry in log order, every proof against that one checkpoint. Checked line by
line, so a file of any length streams through: the checkpoint signed by the log key, each entry's
inclusion proof against its root (the leaf being the entry's RFC 8785 bytes), leaves in increasing
order, and each receipt's signature against the signing key its recipient agent's latest key entry
before it gives (``AgentConnected`` in the agent's stream). A receipt whose agent's key entry is not
in the export is counted unverifiable, never verified. The Node SDK's ``verifyExport`` does the
same, with the same report and messages, so both CLIs print the same for one file.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, NotRequired, TypedDict

from .crypto import from_base64
from .errors import HandoffCryptoError
from .transparency import (
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


class ReceiptCounts(TypedDict):
    verified: int
    #: Receipts whose recipient's key entry is not in this export (another account's agent).
    unverifiable: int


class Problem(TypedDict):
    #: 1-based.
    line: int
    message: str


class ExportReport(TypedDict):
    ok: bool
    origin: str | None
    tree_size: int | None
    entries: int
    receipts: ReceiptCounts
    #: The first thing wrong, when not ok.
    problem: NotRequired[Problem]


class _Failed(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _entry_line(parsed: Any) -> tuple[int, dict[str, Any], list[Any]] | None:
    if not isinstance(parsed, dict):
        return None
    index, entry, inclusion = parsed.get("leaf_index"), parsed.get("entry"), parsed.get("inclusion")
    if isinstance(index, bool) or not isinstance(index, int) or not isinstance(inclusion, list):
        return None
    if not isinstance(entry, dict) or not isinstance(entry.get("data"), dict):
        return None
    return index, entry, inclusion


def _signature_valid(signer: str, receipt: Any, signature: str) -> bool:
    try:
        return ed25519_valid(from_base64(signer), from_base64(signature), canonical_json(receipt))
    except (HandoffCryptoError, TransparencyError):
        return False


class _Check:
    def __init__(self, key: VerifierKey) -> None:
        self.key = key
        self.report: ExportReport = {
            "ok": True,
            "origin": None,
            "tree_size": None,
            "entries": 0,
            "receipts": {"verified": 0, "unverifiable": 0},
        }
        self.root: bytes | None = None
        self.size = 0
        self.previous = -1
        #: Each agent stream's signing key as its latest key entry so far gives it.
        self.signing_keys: dict[str, str | None] = {}

    def line(self, text: str) -> None:
        if not text.strip():
            return
        try:
            parsed = json.loads(text)
        except ValueError:
            raise _Failed("not JSON") from None
        if self.root is None:
            self.checkpoint(parsed)
        else:
            self.entry(parsed)

    def checkpoint(self, parsed: Any) -> None:
        note = parsed.get("checkpoint") if isinstance(parsed, dict) else None
        if not isinstance(note, str):
            raise _Failed("the export does not start with a checkpoint")
        try:
            checkpoint = open_checkpoint(note, self.key)
        except TransparencyError as error:
            raise _Failed(f"the checkpoint does not verify: {error}") from None
        self.root, self.size = checkpoint.root, checkpoint.size
        self.report["origin"], self.report["tree_size"] = checkpoint.origin, checkpoint.size

    def entry(self, parsed: Any) -> None:
        line = _entry_line(parsed)
        if line is None:
            raise _Failed("not an export entry")
        index, entry, inclusion = line
        if index <= self.previous:
            raise _Failed(f"leaf {index} comes after leaf {self.previous}")
        self.previous = index
        try:
            proof = [from_base64(hash_) for hash_ in inclusion]
        except (HandoffCryptoError, TypeError):
            raise _Failed("its inclusion proof is not base64") from None
        assert self.root is not None
        try:
            verify_inclusion(index, self.size, leaf_hash(canonical_json(entry)), proof, self.root)
        except TransparencyError:
            raise _Failed(f"leaf {index} is not in the checkpoint's tree as given") from None
        self.report["entries"] += 1
        kind, data = entry.get("type"), entry["data"]
        if kind == KEY_ENTRY:
            signing = data.get("signingPublicKey")
            self.signing_keys[str(entry.get("stream"))] = signing if isinstance(signing, str) else None
        elif kind == RECEIPT_ENTRY:
            self.receipt(index, data)

    def receipt(self, index: int, data: dict[str, Any]) -> None:
        receipt, signature = data.get("receipt"), data.get("signature")
        recipient = receipt.get("recipient") if isinstance(receipt, dict) else None
        signer = self.signing_keys.get(f"agent-{recipient}") if isinstance(recipient, str) else None
        if not signer or not isinstance(signature, str):
            self.report["receipts"]["unverifiable"] += 1
        elif _signature_valid(signer, receipt, signature):
            self.report["receipts"]["verified"] += 1
        else:
            raise _Failed(f"the receipt at leaf {index} is not signed by its recipient's key")


def verify_export(lines: Iterable[str], key: VerifierKey) -> ExportReport:
    """Checks an export line by line against the log's verifier key; stops at the first problem,
    which the report names with its line."""
    check = _Check(key)
    number = 0
    try:
        for number, text in enumerate(lines, start=1):
            check.line(text)
        if check.root is None:
            raise _Failed("the export is empty")
    except _Failed as failure:
        check.report["ok"] = False
        check.report["problem"] = {"line": number, "message": failure.message}
    return check.report
