"""The format of decisions 5.1–5.4, byte for byte as the Node SDK writes it (docs/encryption.md).

Sans-I/O: functions of bytes and small state machines that take chunks and give chunks back, so
the synchronous and the asynchronous client share every line of it. AES-GCM, X25519, Ed25519 and
HKDF are the ``cryptography`` package's (OpenSSL).
"""

from __future__ import annotations

import base64
import binascii
import os
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from cryptography.exceptions import InvalidSignature, InvalidTag
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from .errors import HandoffCryptoError

RECORD_SIZE = 65536
HEADER_SIZE = 24
TAG_SIZE = 16
SALT_SIZE = 16
KEY_SIZE = 32
NONCE_SIZE = 12
MIN_RECORD_SIZE = 1024
MAX_RECORD_SIZE = 16 * 1024 * 1024
ENCRYPTED_KEY_SIZE = KEY_SIZE + NONCE_SIZE + KEY_SIZE + TAG_SIZE
SIGNATURE_SIZE = 64
ENCRYPTION_ALGORITHM = "AES-256-GCM"

MAGIC = b"HOE1"
_AES_BLOCK_SIZE = 16
_FILE_INFO = b"handoff/v1 file"
_WRAP_INFO = b"handoff/v1 key-wrap"
_SIGNATURE_DOMAIN = "handoff/v1 signature"
_BASE64 = re.compile(r"^[A-Za-z0-9+/]*={0,2}$")

# --- encoding ---------------------------------------------------------------------------------


def to_base64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def from_base64(text: str) -> bytes:
    """Standard padded base64, refusing anything but its canonical spelling (``BAD_ENCODING``)."""
    try:
        if len(text) % 4 != 0 or not _BASE64.match(text):
            raise ValueError(text)
        data = base64.b64decode(text, validate=True)
    except (ValueError, binascii.Error):
        raise HandoffCryptoError("BAD_ENCODING", "not canonical base64") from None
    if to_base64(data) != text:
        raise HandoffCryptoError("BAD_ENCODING", "not canonical base64")
    return data


# --- keys (5.1) -------------------------------------------------------------------------------


@dataclass(frozen=True)
class KeyPair:
    """Raw 32-byte keys; for Ed25519 the private key is the 32-byte seed (RFC 8032)."""

    private_key: bytes
    public_key: bytes


def _require_key(key: bytes, what: str) -> bytes:
    if not isinstance(key, (bytes, bytearray)) or len(key) != KEY_SIZE:
        raise HandoffCryptoError("BAD_KEY", f"{what} must be {KEY_SIZE} bytes")
    return bytes(key)


_RAW = serialization.Encoding.Raw
_RAW_PUBLIC = serialization.PublicFormat.Raw


def x25519_public_key_of(private_key: bytes) -> bytes:
    key = X25519PrivateKey.from_private_bytes(_require_key(private_key, "X25519 private key"))
    return key.public_key().public_bytes(_RAW, _RAW_PUBLIC)


def ed25519_public_key_of(seed: bytes) -> bytes:
    key = Ed25519PrivateKey.from_private_bytes(_require_key(seed, "Ed25519 seed"))
    return key.public_key().public_bytes(_RAW, _RAW_PUBLIC)


def generate_x25519_key_pair() -> KeyPair:
    private_key = os.urandom(KEY_SIZE)
    return KeyPair(private_key, x25519_public_key_of(private_key))


def generate_ed25519_key_pair() -> KeyPair:
    seed = os.urandom(KEY_SIZE)
    return KeyPair(seed, ed25519_public_key_of(seed))


def new_content_key() -> bytes:
    """A fresh random 32-byte content key K (5.2)."""
    return os.urandom(KEY_SIZE)


def x25519_shared_secret(private_key: bytes, public_key: bytes) -> bytes:
    """X25519(private, public), refusing an all-zero result (5.1) with ``ZERO_SHARED_SECRET``."""
    own = X25519PrivateKey.from_private_bytes(_require_key(private_key, "X25519 private key"))
    peer = X25519PublicKey.from_public_bytes(_require_key(public_key, "X25519 public key"))
    try:
        shared = own.exchange(peer)
    except ValueError:  # OpenSSL refuses the all-zero output of a low-order point
        shared = bytes(KEY_SIZE)
    if shared == bytes(KEY_SIZE):
        raise HandoffCryptoError(
            "ZERO_SHARED_SECRET",
            "X25519 with this public key gives an all-zero shared secret (a low-order point)",
        )
    return shared


def hkdf_sha256(ikm: bytes, salt: bytes, info: bytes) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=KEY_SIZE, salt=salt, info=info).derive(ikm)


# --- the content key and its wrapping (5.2) -----------------------------------------------------


def _wrapping_key(own_private: bytes, peer_public: bytes, ephemeral: bytes, recipient: bytes) -> AESGCM:
    shared = x25519_shared_secret(own_private, peer_public)
    return AESGCM(hkdf_sha256(shared, ephemeral + recipient, _WRAP_INFO))


def wrap_content_key(
    content_key: bytes,
    recipient_public_key: bytes,
    *,
    ephemeral_private_key: bytes | None = None,
    nonce: bytes | None = None,
) -> str:
    """``encrypted_key`` = base64(E ‖ N ‖ C). The fixed ephemeral key and nonce are for test vectors."""
    _require_key(content_key, "content key")
    ephemeral_private = ephemeral_private_key or os.urandom(KEY_SIZE)
    wrap_nonce = nonce if nonce is not None else os.urandom(NONCE_SIZE)
    if len(wrap_nonce) != NONCE_SIZE:
        raise HandoffCryptoError("BAD_ENCODING", f"nonce must be {NONCE_SIZE} bytes")
    recipient = _require_key(recipient_public_key, "X25519 public key")
    ephemeral_public = x25519_public_key_of(ephemeral_private)
    key = _wrapping_key(ephemeral_private, recipient, ephemeral_public, recipient)
    return to_base64(ephemeral_public + wrap_nonce + key.encrypt(wrap_nonce, bytes(content_key), None))


def unwrap_content_key(encrypted_key: str, recipient_private_key: bytes) -> bytes:
    """K again; ``BAD_KEY`` when it was not wrapped to this private key (or was altered)."""
    data = from_base64(encrypted_key)
    if len(data) != ENCRYPTED_KEY_SIZE:
        raise HandoffCryptoError("BAD_ENCODING", f"encrypted_key must be {ENCRYPTED_KEY_SIZE} bytes")
    ephemeral_public = data[:KEY_SIZE]
    nonce = data[KEY_SIZE : KEY_SIZE + NONCE_SIZE]
    recipient_public = x25519_public_key_of(recipient_private_key)
    key = _wrapping_key(recipient_private_key, ephemeral_public, ephemeral_public, recipient_public)
    try:
        return key.decrypt(nonce, data[KEY_SIZE + NONCE_SIZE :], None)
    except InvalidTag:
        raise HandoffCryptoError(
            "BAD_KEY", "the content key is not wrapped to this private key, or was altered"
        ) from None


# --- file bytes: streaming records (5.3) ------------------------------------------------------


def record_count(plain_size: int, record_size: int = RECORD_SIZE) -> int:
    return max(1, -(-plain_size // record_size))


def encrypted_size(plain_size: int, record_size: int = RECORD_SIZE) -> int:
    """24 + size + 16 × max(1, ceil(size / record size)): the size uploaded and stored."""
    if plain_size < 0:
        raise ValueError("plain_size must be a byte count")
    _require_record_size(record_size)
    return HEADER_SIZE + plain_size + TAG_SIZE * record_count(plain_size, record_size)


def plain_size_of(wire_size: int) -> int:
    """The plaintext size of a file of ``wire_size`` bytes written with the default record size."""
    body = max(0, wire_size - HEADER_SIZE)
    records = max(1, -(-body // (RECORD_SIZE + TAG_SIZE)))
    return max(0, body - TAG_SIZE * records)


def _require_record_size(record_size: int) -> int:
    if not MIN_RECORD_SIZE <= record_size <= MAX_RECORD_SIZE:
        raise HandoffCryptoError(
            "BAD_RECORD_SIZE",
            f"record size {record_size} is outside {MIN_RECORD_SIZE}–{MAX_RECORD_SIZE} bytes",
        )
    return record_size


def file_key(content_key: bytes, salt: bytes) -> bytes:
    """F = HKDF-SHA256(ikm = K, salt = salt, info = "handoff/v1 file")."""
    return hkdf_sha256(_require_key(content_key, "content key"), salt, _FILE_INFO)


def record_nonce(index: int, last: bool) -> bytes:
    """Record i's nonce: i as 11-byte big-endian ‖ flag (0x01 on the last record)."""
    return index.to_bytes(11, "big") + (b"\x01" if last else b"\x00")


def encode_header(record_size: int, salt: bytes) -> bytes:
    return MAGIC + _require_record_size(record_size).to_bytes(4, "big") + salt


def _salt_of(encryption_iv: str) -> bytes:
    salt = from_base64(encryption_iv)
    if len(salt) != SALT_SIZE:
        raise HandoffCryptoError("BAD_ENCODING", f"encryption_iv must be base64 of {SALT_SIZE} bytes")
    return salt


class RecordEncryptor:
    """Encrypts one file as 5.3, fed its plaintext in chunks of any size.

    ``push`` answers the records it could seal; one full record is held back until a further
    byte (then it is an inner record) or ``finish`` (then it is the last) says which it is.
    ``first_record`` starts at a later record (a resumed upload, decisions 7.2): the same key,
    salt and index seal the same record.
    """

    def __init__(
        self, content_key: bytes, salt: bytes, record_size: int = RECORD_SIZE, first_record: int = 0
    ) -> None:
        if len(salt) != SALT_SIZE:
            raise HandoffCryptoError("BAD_ENCODING", f"salt must be {SALT_SIZE} bytes")
        self.header = encode_header(record_size, salt)
        self.encryption_iv = to_base64(salt)
        self._cipher = AESGCM(file_key(content_key, salt))
        self._record_size = record_size
        self._pending = bytearray()
        self._index = first_record

    def push(self, chunk: bytes) -> list[bytes]:
        size = self._record_size
        pending = self._pending
        if not pending and len(chunk) > size:
            # Aligned reads (the usual case) are sealed from the chunk itself, not copied in first.
            inner = (len(chunk) - 1) // size
            sealed = [self._seal(chunk[i * size : (i + 1) * size], False) for i in range(inner)]
            pending += chunk[inner * size :]
            return sealed
        pending += chunk
        inner = (len(pending) - 1) // size if pending else 0
        sealed = [self._seal(bytes(pending[i * size : (i + 1) * size]), False) for i in range(inner)]
        del pending[: inner * size]
        return sealed

    def finish(self) -> bytes:
        """The last record: what is held (empty only when the whole file was)."""
        last = self._seal(bytes(self._pending), True)
        self._pending.clear()
        return last

    def _seal(self, plaintext: bytes, last: bool) -> bytes:
        sealed = self._cipher.encrypt(record_nonce(self._index, last), plaintext, None)
        self._index += 1
        return sealed


def encrypt_chunks(
    chunks: Iterable[bytes],
    content_key: bytes,
    salt: bytes,
    record_size: int = RECORD_SIZE,
) -> Iterator[bytes]:
    """The encrypted file (header, then each record) as the plaintext chunks come."""
    encryptor = RecordEncryptor(content_key, salt, record_size)
    yield encryptor.header
    for chunk in chunks:
        yield from encryptor.push(chunk)
    yield encryptor.finish()


def _truncated(where: str) -> HandoffCryptoError:
    return HandoffCryptoError("TRUNCATED", f"the encrypted file ends {where}")


def _bad_tag(index: int) -> HandoffCryptoError:
    return HandoffCryptoError(
        "BAD_TAG",
        f"record {index} failed authentication: the file was altered, cut mid-record, or the key is wrong",
    )


def _bad_magic() -> HandoffCryptoError:
    return HandoffCryptoError("BAD_MAGIC", "not a Handoff encrypted file (no HOE1 header)")


class RecordDecryptor:
    """Decrypts one file written as 5.3, chunk by chunk, refusing everything 5.3 lists.

    ``push`` and ``end`` answer plaintext only once its record's tag verified. A refusal can come
    after earlier records were answered, so callers write to a temporary file and keep it only
    when ``end`` succeeded.

    Each record is gathered into one buffer and opened into another, both made once per file: a
    new object per record is freed a moment later, and glibc hands such memory back to the kernel
    and takes it again, a page fault for every 4 KiB of the file (it doubled the system time of a
    1 GiB receive). So the plaintext answered is a view of the decryptor's own buffer, valid only
    until the next record is opened: write or copy it before asking for the next.
    """

    def __init__(self, content_key: bytes, encryption_iv: str) -> None:
        self._key = _require_key(content_key, "content key")
        self._salt = _salt_of(encryption_iv)
        self._header = bytearray()
        self._cipher: algorithms.AES | None = None
        self._sealed = memoryview(bytearray())
        self._plain = bytearray()
        self._filled = 0
        self._index = 0

    def push(self, chunk: bytes | memoryview) -> Iterator[memoryview]:
        """The records ``chunk`` completes, opened as it is iterated; iterate it to the end."""
        data = memoryview(chunk)
        at = 0 if self._cipher is not None else self._read_header(data)
        if self._cipher is None:
            return
        sealed_size = len(self._sealed)
        while at < len(data):
            if self._filled == sealed_size:  # a full record with a byte after it: an inner record
                yield self._open_inner()
            take = min(len(data) - at, sealed_size - self._filled)
            self._sealed[self._filled : self._filled + take] = data[at : at + take]
            self._filled += take
            at += take

    def end(self) -> memoryview:
        """After the last chunk: the last record's plaintext (empty for an empty file), or a
        refusal of a file that ended too early."""
        if self._cipher is None:
            raise _truncated("inside the header") if MAGIC.startswith(self._header[:4]) else _bad_magic()
        filled, self._filled = self._filled, 0
        if filled < TAG_SIZE:
            raise _truncated("before a record flagged last")
        plaintext = self._open(filled, True)
        if plaintext is None:
            cut_at_boundary = filled == len(self._sealed) and self._open(filled, False) is not None
            raise _truncated("before a record flagged last") if cut_at_boundary else _bad_tag(self._index)
        return plaintext

    def _read_header(self, data: memoryview) -> int:
        """Takes the header's bytes from ``data``; answers how many it took."""
        header = self._header
        take = min(len(data), HEADER_SIZE - len(header))
        header += data[:take]
        if not MAGIC.startswith(header[:4]):
            raise _bad_magic()
        if len(header) < HEADER_SIZE:
            return take
        record_size = _require_record_size(int.from_bytes(header[4:8], "big"))
        if bytes(header[8:HEADER_SIZE]) != self._salt:
            raise HandoffCryptoError("SALT_MISMATCH", "the file's salt differs from its encryption_iv")
        self._cipher = algorithms.AES(file_key(self._key, self._salt))
        self._sealed = memoryview(bytearray(record_size + TAG_SIZE))
        # update_into asks for a block's worth of room beyond the bytes it writes.
        self._plain = bytearray(record_size + _AES_BLOCK_SIZE - 1)
        return take

    def _open_inner(self) -> memoryview:
        """The gathered full record, which must open as an inner record."""
        self._filled = 0
        plaintext = self._open(len(self._sealed), False)
        if plaintext is None:
            if self._open(len(self._sealed), True) is not None:
                raise HandoffCryptoError("TRAILING_DATA", f"bytes follow the last record (record {self._index})")
            raise _bad_tag(self._index)
        self._index += 1
        return plaintext

    def _open(self, size: int, last: bool) -> memoryview | None:
        """The first ``size`` gathered bytes opened as record ``_index``, or None when the tag fails."""
        assert self._cipher is not None
        body = size - TAG_SIZE
        tag = bytes(self._sealed[body:size])
        decryptor = Cipher(self._cipher, modes.GCM(record_nonce(self._index, last), tag)).decryptor()
        written = decryptor.update_into(self._sealed[:body], self._plain)
        try:
            decryptor.finalize()
        except InvalidTag:
            return None
        return memoryview(self._plain)[:written]


def decrypt_chunks(chunks: Iterable[bytes], content_key: bytes, encryption_iv: str) -> Iterator[bytes]:
    """The plaintext of an encrypted file as its chunks come; refusals raise HandoffCryptoError."""
    decryptor = RecordDecryptor(content_key, encryption_iv)
    for chunk in chunks:
        for plaintext in decryptor.push(chunk):
            yield bytes(plaintext)  # the decryptor reuses the view's buffer for its next record
    yield bytes(decryptor.end())


# --- sender signature (5.4) ---------------------------------------------------------------------


@dataclass(frozen=True)
class SignedTransfer:
    """What the sender signs; files as ``(name, encryption_iv)`` in upload order."""

    sender: str
    recipient: str
    recipient_key_version: int
    encrypted_key: str
    files: Sequence[tuple[str, str]]


_JSON_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def js_json_string(text: str) -> str:
    """A string exactly as JavaScript's JSON.stringify spells it (docs/encryption.md)."""
    out = ['"']
    for char in text:
        code = ord(char)
        if char in _JSON_ESCAPES:
            out.append(_JSON_ESCAPES[char])
        elif code < 0x20 or 0xD800 <= code <= 0xDFFF:
            out.append(f"\\u{code:04x}")
        else:
            out.append(char)
    out.append('"')
    return "".join(out)


def signature_message(t: SignedTransfer) -> bytes:
    """M = UTF-8 of JSON.stringify(["handoff/v1 signature", sender, recipient, version, key, files])."""
    files = ",".join(f"[{js_json_string(name)},{js_json_string(iv)}]" for name, iv in t.files)
    fields = [_SIGNATURE_DOMAIN, t.sender, t.recipient]
    text = (
        "["
        + ",".join(js_json_string(field) for field in fields)
        + f",{int(t.recipient_key_version)},{js_json_string(t.encrypted_key)},[{files}]]"
    )
    return text.encode("utf-8")


def sign_transfer(signing_seed: bytes, t: SignedTransfer) -> str:
    key = Ed25519PrivateKey.from_private_bytes(_require_key(signing_seed, "Ed25519 seed"))
    return to_base64(key.sign(signature_message(t)))


def verify_transfer(signing_public_key: bytes, t: SignedTransfer, signature: str) -> bool:
    """True only for a valid signature by this key over exactly this transfer; never raises."""
    try:
        signature_bytes = from_base64(signature)
        if len(signature_bytes) != SIGNATURE_SIZE or len(signing_public_key) != KEY_SIZE:
            return False
        Ed25519PublicKey.from_public_bytes(bytes(signing_public_key)).verify(
            signature_bytes, signature_message(t)
        )
        return True
    except (InvalidSignature, HandoffCryptoError, ValueError):
        return False
