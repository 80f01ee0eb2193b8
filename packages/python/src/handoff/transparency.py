"""Verifiable custody, pure (decisions 9): what the Node SDK's ``@handoff/sdk/transparency`` does.

RFC 8785 canonical JSON (leaves and receipts), RFC 6962 hashing and RFC 9162 inclusion and
consistency verification, C2SP signed-note checkpoints (Ed25519), the check of an agent's key
proof, receipts' signatures and the offline check of an audit export. No I/O: custody.py and the
CLI fetch and read, this module decides, byte for byte as the Node client does.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from .crypto import ed25519_public_key_of, from_base64, js_json_string, to_base64
from .errors import HandoffCryptoError

HASH_SIZE = 32
RECEIPT_TYPE = "handoff.receipt/v1"
_ED25519_TYPE = 0x01
_SIGNATURE_PREFIX = "\u2014 "


# --- RFC 8785 canonical JSON -------------------------------------------------------------------


def canonical_json(value: Any) -> str:
    """RFC 8785 (JCS): strings and numbers as ECMAScript's JSON.stringify writes them, object keys
    sorted by UTF-16 code units; what leaves and receipts are hashed and signed as."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return _canonical_string(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _js_number(value)
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(canonical_json(item) for item in value) + "]"
    if isinstance(value, dict):
        keys = sorted(value, key=lambda key: str(key).encode("utf-16-be", "surrogatepass"))
        members = (f"{_canonical_string(str(key))}:{canonical_json(value[key])}" for key in keys)
        return "{" + ",".join(members) + "}"
    raise TypeError(f"a {type(value).__name__} has no JSON")


def _canonical_string(text: str) -> str:
    if any(0xD800 <= ord(char) <= 0xDFFF for char in text):
        raise TypeError("a lone surrogate has no canonical JSON")
    return js_json_string(text)


def _js_number(number: float) -> str:
    """ECMAScript Number::toString of a finite double (RFC 8785 3.2.2.3)."""
    if not math.isfinite(number):
        raise TypeError(f"{number} has no canonical JSON")
    if number == 0:
        return "0"
    sign = "-" if number < 0 else ""
    # repr gives the shortest digits that read back as the same double, as ECMAScript chooses them.
    _, digit_tuple, exponent = Decimal(repr(abs(number))).normalize().as_tuple()
    digits = "".join(str(d) for d in digit_tuple)
    k = len(digits)
    n = k + int(exponent)  # the value is 0.digits × 10^n
    if k <= n <= 21:
        text = digits + "0" * (n - k)
    elif 0 < n <= 21:
        text = f"{digits[:n]}.{digits[n:]}"
    elif -6 < n <= 0:
        text = "0." + "0" * (-n) + digits
    else:
        mantissa = digits[0] + (f".{digits[1:]}" if k > 1 else "")
        text = f"{mantissa}e{'+' if n - 1 > 0 else '-'}{abs(n - 1)}"
    return sign + text


def entry_bytes(entry: dict[str, Any]) -> bytes:
    """A leaf's bytes (decisions 9.1): the UTF-8 of the entry's canonical JSON."""
    return canonical_json(entry).encode("utf-8")


# --- The Merkle tree (RFC 6962 2.1, RFC 9162 2.1.3-2.1.4) -----------------------------------------


def leaf_hash(leaf: bytes) -> bytes:
    return hashlib.sha256(b"\x00" + leaf).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + left + right).digest()


def entry_leaf_hash(entry: dict[str, Any]) -> bytes:
    return leaf_hash(entry_bytes(entry))


def verify_inclusion(hash_: bytes, index: int, size: int, proof: list[bytes], root: bytes) -> bool:
    """RFC 9162 2.1.3.2: does ``proof`` put this leaf hash at ``index`` of the tree of ``size``?"""
    if not (0 <= index < size):
        return False
    fn, sn, r = index, size - 1, hash_
    for p in proof:
        if sn == 0 or len(p) != HASH_SIZE:
            return False
        if fn % 2 == 1 or fn == sn:
            r = node_hash(p, r)
            while fn % 2 == 0 and fn != 0:
                fn //= 2
                sn //= 2
        else:
            r = node_hash(r, p)
        fn //= 2
        sn //= 2
    return sn == 0 and hmac.compare_digest(r, root)


def verify_consistency(first: int, second: int, first_root: bytes, second_root: bytes, proof: list[bytes]) -> bool:
    """RFC 9162 2.1.4.2: is the tree of ``second`` leaves an extension of the one of ``first``?"""
    if not (0 < first <= second):
        return False
    if first == second:
        return not proof and hmac.compare_digest(first_root, second_root)
    if any(len(p) != HASH_SIZE for p in proof):
        return False
    path = [first_root, *proof] if first & (first - 1) == 0 else list(proof)
    if not path:
        return False
    fn, sn = first - 1, second - 1
    while fn % 2 == 1:
        fn //= 2
        sn //= 2
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            return False
        if fn % 2 == 1 or fn == sn:
            fr = node_hash(c, fr)
            sr = node_hash(c, sr)
            while fn % 2 == 0 and fn != 0:
                fn //= 2
                sn //= 2
        else:
            sr = node_hash(sr, c)
        fn //= 2
        sn //= 2
    return sn == 0 and hmac.compare_digest(fr, first_root) and hmac.compare_digest(sr, second_root)


# --- Signed notes and checkpoints (C2SP signed-note, tlog-checkpoint) ------------------------------


class NoteError(ValueError):
    """A note that is malformed or not signed by the key asked for."""


@dataclass(frozen=True)
class VerifierKey:
    origin: str
    public_key: bytes
    key_id: bytes


@dataclass(frozen=True)
class Checkpoint:
    origin: str
    size: int
    root: bytes


def note_key_id(origin: str, public_key: bytes) -> bytes:
    """The first 4 bytes of SHA-256(origin ‖ "\\n" ‖ 0x01 ‖ public key)."""
    return hashlib.sha256(origin.encode("utf-8") + b"\n" + bytes([_ED25519_TYPE]) + public_key).digest()[:4]


def _require_name(name: str) -> None:
    if not name or re.search(r"[\s+]", name):
        raise NoteError("a key name must be non-empty, without spaces or '+'")


def format_verifier_key(origin: str, public_key: bytes) -> str:
    _require_name(origin)
    return f"{origin}+{note_key_id(origin, public_key).hex()}+{to_base64(bytes([_ED25519_TYPE]) + public_key)}"


def parse_verifier_key(vkey: str) -> VerifierKey:
    """``<origin>+<8 hex digits of key id>+<base64(0x01 ‖ public key)>``."""
    parts = vkey.split("+")
    origin, hex_id, typed_key = (parts[0], parts[1], "+".join(parts[2:])) if len(parts) >= 3 else ("", "", "")
    if not origin or not hex_id or not typed_key:
        raise NoteError("malformed verifier key")
    _require_name(origin)
    try:
        typed = from_base64(typed_key)
    except HandoffCryptoError:
        raise NoteError("malformed verifier key: key is not base64") from None
    if len(typed) != 33 or typed[0] != _ED25519_TYPE:
        raise NoteError("verifier key is not an Ed25519 key")
    public_key = typed[1:]
    key_id = note_key_id(origin, public_key)
    if not re.fullmatch(r"[0-9a-fA-F]{8}", hex_id) or key_id.hex() != hex_id.lower():
        raise NoteError("verifier key id does not match its key")
    return VerifierKey(origin, public_key, key_id)


def sign_note(body: str, origin: str, seed: bytes) -> str:
    """A note: ``body``, an empty line, and one signature line by the key whose seed this is."""
    if not body.endswith("\n"):
        raise NoteError("a note's body ends with a newline")
    _require_name(origin)
    signature = Ed25519PrivateKey.from_private_bytes(seed).sign(body.encode("utf-8"))
    key_id = note_key_id(origin, ed25519_public_key_of(seed))
    return f"{body}\n{_SIGNATURE_PREFIX}{origin} {to_base64(key_id + signature)}\n"


def _ed25519_valid(public_key: bytes, signature: bytes, message: bytes) -> bool:
    try:
        Ed25519PublicKey.from_public_bytes(public_key).verify(signature, message)
    except (InvalidSignature, ValueError):
        return False
    return True


def open_note(note: str, key: VerifierKey) -> str:
    """The body of a note that carries a valid signature by ``key``; others' lines are passed over."""
    split = note.rfind("\n\n")
    if split < 0 or not note.endswith("\n"):
        raise NoteError("malformed note: no signature block")
    body = note[: split + 1]
    for line in note[split + 2 : -1].split("\n"):
        if not line.startswith(_SIGNATURE_PREFIX):
            raise NoteError("malformed note: bad signature line")
        fields = line[len(_SIGNATURE_PREFIX) :].split(" ")
        if len(fields) != 2 or not fields[0] or not fields[1]:
            raise NoteError("malformed note: bad signature line")
        name, encoded = fields
        if name != key.origin:
            continue
        try:
            signed = from_base64(encoded)
        except HandoffCryptoError:
            raise NoteError("malformed note: signature is not base64") from None
        if len(signed) != 68 or signed[:4] != key.key_id:
            continue
        if _ed25519_valid(key.public_key, signed[4:], body.encode("utf-8")):
            return body
        raise NoteError(f"the signature of {key.origin} on this note is invalid")
    raise NoteError(f"the note is not signed by {key.origin}")


def checkpoint_body(checkpoint: Checkpoint) -> str:
    return f"{checkpoint.origin}\n{checkpoint.size}\n{to_base64(checkpoint.root)}\n"


def parse_checkpoint(body: str) -> Checkpoint:
    """Origin, tree size and root; extension lines after the root are allowed and ignored."""
    lines = body.split("\n")
    if len(lines) < 3 or not lines[0] or not re.fullmatch(r"0|[1-9][0-9]*", lines[1]) or not lines[2]:
        raise NoteError("malformed checkpoint")
    try:
        root = from_base64(lines[2])
    except HandoffCryptoError:
        raise NoteError("malformed checkpoint: root is not base64") from None
    size = int(lines[1])
    if len(root) != HASH_SIZE or size > 2**53 - 1:
        raise NoteError("malformed checkpoint")
    return Checkpoint(lines[0], size, root)


def open_checkpoint(note: str, key: VerifierKey) -> Checkpoint:
    """The checkpoint a note carries, once its signature by ``key`` and its origin check out."""
    checkpoint = parse_checkpoint(open_note(note, key))
    if checkpoint.origin != key.origin:
        raise NoteError("the checkpoint's origin is not its signer's")
    return checkpoint


# --- Key proofs (decisions 9.6) ------------------------------------------------------------------


class KeyProofError(ValueError):
    """A key proof that does not back the keys answered; the message says what failed."""


def check_key_proof(proof: dict[str, Any], keys: dict[str, Any], log_key: VerifierKey) -> Checkpoint:
    """The Node SDK's checkKeyProof: the checkpoint signed by the log and of the proof's size, the
    entry the agent's key registration holding exactly the keys answered, included at its leaf.
    Answers the checkpoint, for the caller to hold against the ones it saw before."""
    try:
        checkpoint = open_checkpoint(proof["checkpoint"], log_key)
    except NoteError as error:
        raise KeyProofError(f"its checkpoint is not the log's: {error}") from None
    if checkpoint.size != proof.get("tree_size"):
        raise KeyProofError("its checkpoint is of another tree size")
    entry = proof.get("entry")
    data = entry.get("data") if isinstance(entry, dict) else None
    backed = (
        isinstance(entry, dict)
        and isinstance(data, dict)
        and entry.get("type") == "AgentConnected"
        and data.get("publicKey") == keys.get("public_key")
        and data.get("signingPublicKey") == keys.get("signing_public_key")
        and _same_number(data.get("keyVersion"), keys.get("key_version"))
    )
    if not backed:
        raise KeyProofError("the log's entry does not hold the keys answered")
    assert isinstance(entry, dict)
    try:
        hashes = [from_base64(item) for item in proof.get("inclusion", [])]
    except (HandoffCryptoError, TypeError):
        raise KeyProofError("its inclusion proof is not base64") from None
    index = proof.get("leaf_index")
    if not isinstance(index, int) or not verify_inclusion(
        entry_leaf_hash(entry), index, checkpoint.size, hashes, checkpoint.root
    ):
        raise KeyProofError("its inclusion proof does not verify against the signed checkpoint")
    return checkpoint


def _same_number(a: Any, b: Any) -> bool:
    return isinstance(a, int) and isinstance(b, int) and not isinstance(a, bool) and a == b


# --- Receipts (decisions 9.5) --------------------------------------------------------------------


def sign_receipt(signing_seed: bytes, receipt: dict[str, Any]) -> str:
    """base64 of the Ed25519 signature of the receipt's canonical JSON."""
    key = Ed25519PrivateKey.from_private_bytes(signing_seed)
    return to_base64(key.sign(canonical_json(receipt).encode("utf-8")))


def verify_receipt(signing_public_key: bytes, receipt: Any, signature: str) -> bool:
    try:
        message = canonical_json(receipt).encode("utf-8")
        return _ed25519_valid(signing_public_key, from_base64(signature), message)
    except (TypeError, HandoffCryptoError):
        return False


# --- The offline check of an audit export (decisions 9.7) -------------------------------------------


def verify_export(lines: Iterable[str], key: VerifierKey) -> dict[str, Any]:
    """The Node SDK's verifyExport, report for report: the checkpoint's signature, every entry's
    inclusion proof against it, leaves in increasing order, and each receipt's signature against
    the signing key of its recipient's newest key entry before it (a receipt whose agent's key
    entry is not in the export is counted unverifiable). Stops at the first problem, naming its line."""
    report: dict[str, Any] = {
        "ok": True,
        "origin": None,
        "tree_size": None,
        "entries": 0,
        "receipts": {"verified": 0, "unverifiable": 0},
    }

    def fail(line: int, message: str) -> dict[str, Any]:
        return {**report, "ok": False, "problem": {"line": line, "message": message}}

    signing_keys: dict[str, str | None] = {}
    checkpoint: Checkpoint | None = None
    previous = -1
    number = 0
    for text in lines:
        number += 1
        if text.strip() == "":
            continue
        try:
            parsed = _json_loads(text)
        except ValueError:
            return fail(number, "not JSON")
        if checkpoint is None:
            note = parsed.get("checkpoint") if isinstance(parsed, dict) else None
            if not isinstance(note, str):
                return fail(number, "the export does not start with a checkpoint")
            try:
                checkpoint = open_checkpoint(note, key)
            except NoteError as error:
                return fail(number, f"the checkpoint does not verify: {error}")
            report["origin"] = checkpoint.origin
            report["tree_size"] = checkpoint.size
            continue
        index = parsed.get("leaf_index") if isinstance(parsed, dict) else None
        entry = parsed.get("entry") if isinstance(parsed, dict) else None
        inclusion = parsed.get("inclusion") if isinstance(parsed, dict) else None
        if not isinstance(index, int) or isinstance(index, bool) or not isinstance(inclusion, list) or not isinstance(entry, dict):
            return fail(number, "not an export entry")
        if index <= previous:
            return fail(number, f"leaf {index} comes after leaf {previous}")
        previous = index
        try:
            proof = [from_base64(item) for item in inclusion]
        except (HandoffCryptoError, TypeError):
            return fail(number, "its inclusion proof is not base64")
        try:
            hashed = entry_leaf_hash(entry)
        except TypeError:
            return fail(number, "its entry is not JSON the log could hold")
        if not verify_inclusion(hashed, index, checkpoint.size, proof, checkpoint.root):
            return fail(number, f"leaf {index} is not in the checkpoint's tree as given")
        report["entries"] += 1
        raw_data = entry.get("data")
        data: dict[str, Any] = raw_data if isinstance(raw_data, dict) else {}
        if entry.get("type") == "AgentConnected":
            signing = data.get("signingPublicKey")
            signing_keys[str(entry.get("stream"))] = signing if isinstance(signing, str) else None
        elif entry.get("type") == "ReceiptRecorded":
            receipt = data.get("receipt")
            signature = data.get("signature")
            recipient = receipt.get("recipient") if isinstance(receipt, dict) else None
            signer = signing_keys.get(f"agent-{recipient}") if isinstance(recipient, str) else None
            if not signer or not isinstance(signature, str):
                report["receipts"]["unverifiable"] += 1
            elif verify_receipt(from_base64(signer), receipt, signature):
                report["receipts"]["verified"] += 1
            else:
                return fail(number, f"the receipt at leaf {index} is not signed by its recipient's key")
    if checkpoint is None:
        return fail(number, "the export is empty")
    return report


def _json_loads(text: str) -> Any:
    return json.loads(text)
