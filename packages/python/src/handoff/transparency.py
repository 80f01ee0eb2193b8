"""Verifiable custody (decisions 9), the verifier's half: pure functions of bytes and text.

- RFC 8785 (JCS) canonical JSON: the bytes a log leaf and a receipt are hashed and signed as;
- RFC 6962/9162 Merkle hashing and the checks of inclusion (9162 2.1.3.2) and consistency
  (2.1.4.2) proofs;
- C2SP signed notes with Ed25519 (the verifier key ``<name>+<8 hex>+<base64(0x01 ‖ key)>`` and the
  signature lines ``— <name> <base64(key id ‖ signature)>``) and the ``tlog-checkpoint`` body
  ``<origin>\\n<size>\\n<base64 root>\\n``.

The Node SDK writes the same formats (packages/sdk/src/transparency/); the tests check this module
against published vectors (transparency-dev/merkle, Go's sumdb/note, cyberphone's JCS data).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

HASH_SIZE = 32
#: The signature type byte of Ed25519 in signed notes.
ED25519_TYPE = 0x01
SIGNATURE_PREFIX = "\u2014 "
#: Integers beyond this are doubles in JavaScript, where the log's JSON is written.
_MAX_SAFE_INTEGER = 2**53

class TransparencyError(ValueError):
    """A proof, note, checkpoint or value that does not check out; the message says which part."""


# --- RFC 8785 canonical JSON ----------------------------------------------------------------------


def canonical_json(value: object) -> bytes:
    """The RFC 8785 bytes of a JSON value as ``json.loads`` reads it (None, bool, int, float, str,
    list, dict with str keys); anything else, NaN, infinities and lone surrogates are refused."""
    return _canonical(value).encode("utf-8")


def _canonical(value: object) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value) if abs(value) <= _MAX_SAFE_INTEGER else es_number(float(value))
    if isinstance(value, float):
        return es_number(value)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, list):
        return "[" + ",".join(_canonical(item) for item in value) + "]"
    if isinstance(value, dict):
        if not all(isinstance(key, str) for key in value):
            raise TransparencyError("an object key that is not a string has no JSON")
        keys = sorted(value, key=_utf16_order)
        return "{" + ",".join(f"{_string(key)}:{_canonical(value[key])}" for key in keys) + "}"
    raise TransparencyError(f"a {type(value).__name__} has no JSON")


def _utf16_order(key: str) -> bytes:
    """Keys sort by their UTF-16 code units; big-endian UTF-16 bytes compare the same way."""
    return key.encode("utf-16-be", "surrogatepass")


_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_NEEDS_ESCAPE = re.compile(r'["\\\x00-\x1f]')
_SURROGATE = re.compile("[\ud800-\udfff]")


def _string(text: str) -> str:
    if _SURROGATE.search(text):
        raise TransparencyError("a lone surrogate has no canonical JSON")
    escaped = _NEEDS_ESCAPE.sub(lambda match: _ESCAPES.get(match[0], f"\\u{ord(match[0]):04x}"), text)
    return f'"{escaped}"'


def es_number(value: float) -> str:
    """A double as ECMAScript's Number::toString writes it (RFC 8785 3.2.2.3)."""
    if not math.isfinite(value):
        raise TransparencyError(f"{value} has no canonical JSON")
    if value == 0:
        return "0"  # -0 too
    sign = "-" if value < 0 else ""
    # repr is the shortest text that reads back as the same double, as ECMAScript requires.
    _, digit_tuple, exponent = Decimal(repr(abs(value))).as_tuple()
    digits = "".join(map(str, digit_tuple)).rstrip("0")
    assert isinstance(exponent, int)
    exponent += len(digit_tuple) - len(digits)
    k = len(digits)
    n = exponent + k  # the value is 0.<digits> × 10^n
    if k <= n <= 21:
        return sign + digits + "0" * (n - k)
    if 0 < n <= 21:
        return sign + digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * -n + digits
    power = n - 1
    mantissa = digits if k == 1 else digits[0] + "." + digits[1:]
    return f"{sign}{mantissa}e{'+' if power > 0 else '-'}{abs(power)}"


# --- RFC 6962 / 9162 Merkle trees -----------------------------------------------------------------


def leaf_hash(leaf: bytes) -> bytes:
    return hashlib.sha256(b"\x00" + leaf).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + left + right).digest()


def _require_hash(value: bytes, what: str) -> None:
    if len(value) != HASH_SIZE:
        raise TransparencyError(f"{what} is {len(value)} bytes, not a {HASH_SIZE}-byte SHA-256 hash")


def _require_hashes(proof: Sequence[bytes]) -> None:
    for index, element in enumerate(proof):
        _require_hash(element, f"proof element {index}")


def root_from_inclusion(leaf_index: int, tree_size: int, leaf: bytes, proof: Sequence[bytes]) -> bytes:
    """The root that ``proof`` gives leaf hash ``leaf`` at ``leaf_index`` (RFC 9162 2.1.3.2)."""
    if not 0 <= leaf_index < tree_size:
        raise TransparencyError(f"leaf {leaf_index} is outside a tree of {tree_size}")
    _require_hash(leaf, "the leaf hash")
    _require_hashes(proof)
    fn, sn, hash_ = leaf_index, tree_size - 1, leaf
    for element in proof:
        if sn == 0:
            raise TransparencyError("the inclusion proof is too long")
        if fn & 1 or fn == sn:
            hash_ = node_hash(element, hash_)
            while not fn & 1 and fn != 0:
                fn, sn = fn >> 1, sn >> 1
        else:
            hash_ = node_hash(hash_, element)
        fn, sn = fn >> 1, sn >> 1
    if sn != 0:
        raise TransparencyError("the inclusion proof is too short")
    return hash_


def verify_inclusion(leaf_index: int, tree_size: int, leaf: bytes, proof: Sequence[bytes], root: bytes) -> None:
    """Raises TransparencyError unless ``proof`` puts leaf hash ``leaf`` at ``leaf_index`` of the
    tree of ``tree_size`` leaves whose root is ``root``."""
    _require_hash(root, "the root")
    if root_from_inclusion(leaf_index, tree_size, leaf, proof) != root:
        raise TransparencyError(f"leaf {leaf_index} is not in the tree of {tree_size} with this root")


def verify_consistency(size1: int, size2: int, proof: Sequence[bytes], root1: bytes, root2: bytes) -> None:
    """Raises TransparencyError unless ``proof`` shows that the tree of ``size1`` leaves with root
    ``root1`` is a prefix of the tree of ``size2`` with ``root2`` (RFC 9162 2.1.4.2)."""
    _require_hash(root1, "the first root")
    _require_hash(root2, "the second root")
    _require_hashes(proof)
    if not 0 < size1 <= size2:
        raise TransparencyError(f"no consistency proof runs from a tree of {size1} to one of {size2}")
    if size1 == size2:
        if proof:
            raise TransparencyError("a proof between equal sizes must be empty")
        if root1 != root2:
            raise TransparencyError(f"two different roots for the tree of {size1}")
        return
    if not proof:
        raise TransparencyError("the consistency proof is empty")
    path = list(proof)
    if size1 & (size1 - 1) == 0:  # a power of two: the old root is a node of the new tree
        path.insert(0, root1)
    fn, sn = size1 - 1, size2 - 1
    while fn & 1:
        fn, sn = fn >> 1, sn >> 1
    first = second = path[0]
    for element in path[1:]:
        if sn == 0:
            raise TransparencyError("the consistency proof is too long")
        if fn & 1 or fn == sn:
            first, second = node_hash(element, first), node_hash(element, second)
            while not fn & 1 and fn != 0:
                fn, sn = fn >> 1, sn >> 1
        else:
            second = node_hash(second, element)
        fn, sn = fn >> 1, sn >> 1
    if sn != 0:
        raise TransparencyError("the consistency proof is too short")
    if first != root1 or second != root2:
        raise TransparencyError(f"the trees of {size1} and {size2} are not consistent with these roots")


# --- C2SP signed notes and checkpoints ------------------------------------------------------------


@dataclass(frozen=True)
class VerifierKey:
    name: str
    key_id: bytes
    public_key: bytes


def note_key_id(name: str, public_key: bytes) -> bytes:
    """The first 4 bytes of SHA-256(name ‖ "\\n" ‖ 0x01 ‖ public key)."""
    return hashlib.sha256(name.encode("utf-8") + b"\n" + bytes([ED25519_TYPE]) + public_key).digest()[:4]


def _require_name(name: str) -> None:
    if not name or re.search(r"[\s+]", name):
        raise TransparencyError("a note signer's name is not empty and has no spaces or '+'")


def _strict_base64(text: str, what: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise TransparencyError(f"{what} is not base64") from None


def parse_vkey(vkey: str) -> VerifierKey:
    """A note verifier key ``<name>+<8 hex digits of key id>+<base64(0x01 ‖ Ed25519 key)>``."""
    # Base64 may itself hold '+': only the first two separate fields.
    fields = vkey.split("+", 2)
    if len(fields) != 3:
        raise TransparencyError("malformed verifier key")
    name, hex_id, encoded = fields
    _require_name(name)
    typed = _strict_base64(encoded, "the verifier key")
    if len(typed) != 1 + 32 or typed[0] != ED25519_TYPE:
        raise TransparencyError("the verifier key is not an Ed25519 key")
    public_key = typed[1:]
    key_id = note_key_id(name, public_key)
    if not re.fullmatch(r"[0-9a-f]{8}", hex_id) or bytes.fromhex(hex_id) != key_id:
        raise TransparencyError("the verifier key's id does not match its key")
    return VerifierKey(name, key_id, public_key)


def ed25519_valid(public_key: bytes, signature: bytes, message: bytes) -> bool:
    try:
        Ed25519PublicKey.from_public_bytes(public_key).verify(signature, message)
    except (InvalidSignature, ValueError):
        return False
    return True


def open_note(note: str, key: VerifierKey) -> str:
    """The body of a note that carries a valid signature by ``key``; other signers' lines are
    passed over, as the format allows. Raises TransparencyError otherwise."""
    split = note.rfind("\n\n")
    if split < 0 or not note.endswith("\n"):
        raise TransparencyError("malformed note: no signature block")
    # The last blank line ends the body, as Go's sumdb/note reads it.
    body = note[: split + 1]
    for line in note[split + 2 : -1].split("\n"):
        if not line.startswith(SIGNATURE_PREFIX):
            raise TransparencyError("malformed note: a signature line does not start with '— '")
        parts = line[len(SIGNATURE_PREFIX) :].split(" ")
        if len(parts) != 2 or not all(parts):
            raise TransparencyError("malformed note: a signature line is not '— <name> <signature>'")
        name, encoded = parts
        if name != key.name:
            continue
        signed = _strict_base64(encoded, "a note signature")
        if len(signed) != 4 + 64 or signed[:4] != key.key_id:
            continue
        if ed25519_valid(key.public_key, signed[4:], body.encode("utf-8")):
            return body
        raise TransparencyError(f"the signature of {key.name} on this note is invalid")
    raise TransparencyError(f"the note is not signed by {key.name}")


@dataclass(frozen=True)
class Checkpoint:
    origin: str
    size: int
    root: bytes


def parse_checkpoint(body: str) -> Checkpoint:
    """A checkpoint body; extension lines after the root are allowed and ignored (C2SP)."""
    lines = body.split("\n")
    if len(lines) < 4 or not lines[0] or not re.fullmatch(r"0|[1-9][0-9]*", lines[1]) or not lines[2]:
        raise TransparencyError("malformed checkpoint")
    root = _strict_base64(lines[2], "the checkpoint's root")
    _require_hash(root, "the checkpoint's root")
    return Checkpoint(lines[0], int(lines[1]), root)


def open_checkpoint(note: str, key: VerifierKey) -> Checkpoint:
    """The checkpoint a note carries, once its signature by ``key`` checks out and its origin is
    the key's name."""
    checkpoint = parse_checkpoint(open_note(note, key))
    if checkpoint.origin != key.name:
        raise TransparencyError(f"the checkpoint's origin {checkpoint.origin} is not its signer {key.name}")
    return checkpoint


# --- Key proofs and receipts (decisions 9.5, 9.6) ----------------------------------------------------


def check_key_proof(proof: Mapping[str, Any], keys: Mapping[str, Any], log_key: VerifierKey) -> Checkpoint:
    """The Node SDK's checkKeyProof: the checkpoint signed by the log and of the proof's size, the
    entry the agent's key registration (``AgentConnected``) holding exactly the keys answered, and
    included at its leaf. Answers the checkpoint, for the caller to hold against the ones it saw
    before; raises TransparencyError saying what failed."""
    try:
        checkpoint = open_checkpoint(str(proof["checkpoint"]), log_key)
    except TransparencyError as error:
        raise TransparencyError(f"its checkpoint is not the log's: {error}") from None
    if checkpoint.size != proof.get("tree_size"):
        raise TransparencyError("its checkpoint is of another tree size")
    entry = proof.get("entry")
    data = entry.get("data") if isinstance(entry, dict) else None
    version = data.get("keyVersion") if isinstance(data, dict) else None
    backed = (
        isinstance(entry, dict)
        and isinstance(data, dict)
        and entry.get("type") == "AgentConnected"
        and data.get("publicKey") == keys.get("public_key")
        # A request link's agent is only encrypted to: its answer names no signing key to compare.
        and ("signing_public_key" not in keys or data.get("signingPublicKey") == keys.get("signing_public_key"))
        and type(version) is int
        and version == keys.get("key_version")
    )
    if not backed:
        raise TransparencyError("the log's entry does not hold the keys answered")
    hashes = [_strict_base64(str(item), "its inclusion proof") for item in proof.get("inclusion") or []]
    index = proof.get("leaf_index")
    if type(index) is not int:
        raise TransparencyError("its leaf index is not a number")
    try:
        verify_inclusion(index, checkpoint.size, leaf_hash(canonical_json(entry)), hashes, checkpoint.root)
    except TransparencyError:
        raise TransparencyError("its inclusion proof does not verify against the signed checkpoint") from None
    return checkpoint


def sign_receipt(signing_seed: bytes, receipt: Mapping[str, Any]) -> str:
    """base64 of the Ed25519 signature of the receipt's canonical JSON (decisions 9.5)."""
    signature = Ed25519PrivateKey.from_private_bytes(signing_seed).sign(canonical_json(dict(receipt)))
    return base64.b64encode(signature).decode("ascii")
