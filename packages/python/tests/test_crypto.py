"""The format core against the published test vectors (docs/encryption.md), and every refusal of 5.3."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT

from handoff.crypto import (
    HEADER_SIZE,
    RECORD_SIZE,
    TAG_SIZE,
    SignedTransfer,
    decrypt_chunks,
    ed25519_public_key_of,
    encrypt_chunks,
    encrypted_size,
    file_key,
    from_base64,
    js_json_string,
    plain_size_of,
    sign_transfer,
    signature_message,
    to_base64,
    unwrap_content_key,
    verify_transfer,
    wrap_content_key,
    x25519_public_key_of,
    x25519_shared_secret,
)
from handoff.errors import HandoffCryptoError

VECTORS: dict[str, Any] = json.loads((ROOT / "packages/sdk/test/crypto/vectors.json").read_text())
INPUTS = VECTORS["inputs"]
OUTPUTS = VECTORS["outputs"]
K = bytes.fromhex(INPUTS["content_key"])


def hx(name: str) -> bytes:
    return bytes.fromhex(INPUTS[name])


def plaintext_of(file: dict[str, Any]) -> bytes:
    if "plaintext_utf8" in file:
        return str(file["plaintext_utf8"]).encode()
    return bytes(i % 251 for i in range(file["plaintext_mod251_length"]))


def test_the_published_vectors_are_the_ones_in_the_docs() -> None:
    docs = (ROOT / "docs/encryption.md").read_text()
    for value in (OUTPUTS["encrypted_key"], OUTPUTS["sender_signature"], OUTPUTS["files"][0]["ciphertext_hex"]):
        assert value in docs


def test_key_wrap_vectors() -> None:
    recipient = hx("recipient_x25519_private_key")
    ephemeral = hx("ephemeral_x25519_private_key")
    assert x25519_public_key_of(recipient).hex() == OUTPUTS["recipient_x25519_public_key"]
    assert x25519_public_key_of(ephemeral).hex() == OUTPUTS["ephemeral_x25519_public_key"]
    assert x25519_shared_secret(ephemeral, x25519_public_key_of(recipient)).hex() == OUTPUTS["shared_secret"]
    wrapped = wrap_content_key(
        K, x25519_public_key_of(recipient), ephemeral_private_key=ephemeral, nonce=hx("wrap_nonce")
    )
    assert wrapped == OUTPUTS["encrypted_key"]
    assert unwrap_content_key(wrapped, recipient) == K


@pytest.mark.parametrize("index", range(4))
def test_file_vectors_encrypt_and_decrypt(index: int) -> None:
    given, expected = INPUTS["files"][index], OUTPUTS["files"][index]
    salt = bytes.fromhex(given["salt"])
    plaintext = plaintext_of(given)
    assert hashlib.sha256(plaintext).hexdigest() == expected["plaintext_sha256"]
    assert to_base64(salt) == expected["encryption_iv"]
    assert file_key(K, salt).hex() == expected["file_key"]
    for chunk in (len(plaintext) or 1, 1000, 65536, 7):
        pieces = [plaintext[at : at + chunk] for at in range(0, len(plaintext), chunk)]
        encrypted = b"".join(encrypt_chunks(pieces, K, salt))
        assert len(encrypted) == expected["encrypted_size"] == encrypted_size(len(plaintext))
        assert hashlib.sha256(encrypted).hexdigest() == expected["ciphertext_sha256"]
        if "ciphertext_hex" in expected:
            assert encrypted.hex() == expected["ciphertext_hex"]
        assert plain_size_of(len(encrypted)) == len(plaintext)
        cut = [encrypted[at : at + chunk] for at in range(0, len(encrypted), chunk)]
        assert b"".join(decrypt_chunks(cut, K, expected["encryption_iv"])) == plaintext


def test_signature_vectors() -> None:
    seed = hx("signing_ed25519_seed")
    signed = SignedTransfer(
        sender=INPUTS["sender"],
        recipient=INPUTS["recipient"],
        recipient_key_version=INPUTS["recipient_key_version"],
        encrypted_key=OUTPUTS["encrypted_key"],
        files=[(file["name"], file["encryption_iv"]) for file in OUTPUTS["files"]],
    )
    assert ed25519_public_key_of(seed).hex() == OUTPUTS["signing_ed25519_public_key"]
    assert signature_message(signed).decode() == OUTPUTS["signature_message"]
    assert sign_transfer(seed, signed) == OUTPUTS["sender_signature"]
    assert verify_transfer(ed25519_public_key_of(seed), signed, OUTPUTS["sender_signature"])
    renamed = SignedTransfer(signed.sender, signed.recipient, 1, signed.encrypted_key, [("x", "y")])
    assert not verify_transfer(ed25519_public_key_of(seed), renamed, OUTPUTS["sender_signature"])
    assert not verify_transfer(ed25519_public_key_of(seed), signed, "not base64")


def test_signed_json_is_spelled_as_javascript_spells_it() -> None:
    # JSON.stringify's output for each, as node prints it.
    assert js_json_string('a"b\\c') == '"a\\"b\\\\c"'
    assert js_json_string("\b\f\n\r\t\x01\x1f\x7f") == '"\\b\\f\\n\\r\\t\\u0001\\u001f\x7f"'
    assert js_json_string("café 😀 \u2028") == '"café 😀 \u2028"'
    assert js_json_string("\ud800") == '"\\ud800"'


def test_base64_must_be_canonical() -> None:
    assert from_base64("AAE=") == b"\x00\x01"
    for text in ("AAF=", "AAE", "AA E=", "AAE=="):
        with pytest.raises(HandoffCryptoError) as refused:
            from_base64(text)
        assert refused.value.code == "BAD_ENCODING"


def test_low_order_points_are_refused() -> None:
    with pytest.raises(HandoffCryptoError) as refused:
        wrap_content_key(K, bytes(32))
    assert refused.value.code == "ZERO_SHARED_SECRET"


def test_a_key_wrapped_to_another_key_is_bad_key() -> None:
    wrapped = wrap_content_key(K, x25519_public_key_of(os.urandom(32)))
    with pytest.raises(HandoffCryptoError) as refused:
        unwrap_content_key(wrapped, os.urandom(32))
    assert refused.value.code == "BAD_KEY"


# --- refusals of 5.3 --------------------------------------------------------------------------------

SALT = bytes(range(16))
IV = to_base64(SALT)
SEALED = RECORD_SIZE + TAG_SIZE


def encrypted(size: int) -> bytes:
    return b"".join(encrypt_chunks([os.urandom(size)], K, SALT))


def refusal(data: bytes, chunk: int = 4096, iv: str = IV) -> str:
    with pytest.raises(HandoffCryptoError) as refused:
        for _ in decrypt_chunks([data[at : at + chunk] for at in range(0, len(data), chunk)], K, iv):
            pass
    return refused.value.code


@pytest.mark.parametrize("chunk", [1, 4096, 1 << 20])
def test_every_refusal_of_5_3_has_its_code(chunk: int) -> None:
    three = encrypted(2 * RECORD_SIZE + 100)
    exact = encrypted(2 * RECORD_SIZE)
    if chunk > 1:  # a byte at a time through a 131 KiB file is slow and proves nothing more
        flipped = bytearray(three)
        flipped[HEADER_SIZE + 5] ^= 1
        assert refusal(bytes(flipped), chunk) == "BAD_TAG"
        reordered = three[:HEADER_SIZE] + three[HEADER_SIZE + SEALED : HEADER_SIZE + 2 * SEALED]
        reordered += three[HEADER_SIZE : HEADER_SIZE + SEALED] + three[HEADER_SIZE + 2 * SEALED :]
        assert refusal(reordered, chunk) == "BAD_TAG"
        assert refusal(three[: HEADER_SIZE + SEALED], chunk) == "TRUNCATED"
        assert refusal(three[:-10], chunk) == "BAD_TAG"
        assert refusal(three + b"x", chunk) == "BAD_TAG"
        assert refusal(exact + b"more", chunk) == "TRAILING_DATA"
        assert refusal(three, chunk, to_base64(bytes(16))) == "SALT_MISMATCH"
    assert refusal(b"HOE2" + three[4:], chunk) == "BAD_MAGIC"
    assert refusal(b"XY", chunk) == "BAD_MAGIC"
    assert refusal(three[:10], chunk) == "TRUNCATED"
    assert refusal(three[:HEADER_SIZE], chunk) == "TRUNCATED"
    assert refusal(three[:4] + (512).to_bytes(4, "big") + three[8:], chunk) == "BAD_RECORD_SIZE"


def test_nothing_of_a_refused_record_comes_out() -> None:
    data = bytearray(encrypted(3 * RECORD_SIZE))
    data[HEADER_SIZE + SEALED + 1] ^= 1  # the second record
    out: list[bytes] = []
    with pytest.raises(HandoffCryptoError):
        for plaintext in decrypt_chunks([bytes(data)], K, IV):
            out.append(plaintext)
    assert sum(len(part) for part in out) <= RECORD_SIZE


def test_a_changed_byte_anywhere_is_refused(tmp_path: Path) -> None:
    data = encrypted(70_000)
    for at in range(0, len(data), 997):
        changed = bytearray(data)
        changed[at] ^= 0x40
        assert refusal(bytes(changed)) in {"BAD_TAG", "BAD_MAGIC", "BAD_RECORD_SIZE", "SALT_MISMATCH"}
