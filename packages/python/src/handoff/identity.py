"""An agent's identity (decisions 5.1): X25519 to receive, Ed25519 to sign; the file of 5.5."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from .crypto import (
    KeyPair,
    ed25519_public_key_of,
    from_base64,
    generate_ed25519_key_pair,
    generate_x25519_key_pair,
    to_base64,
    x25519_public_key_of,
)
from .errors import HandoffCryptoError, HandoffError
from .files import write_private_file

_AGENT_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
_FIELDS = (
    "agent_id",
    "x25519_private_key",
    "x25519_public_key",
    "ed25519_private_key",
    "ed25519_public_key",
)


@dataclass
class Identity:
    agent_id: str
    x25519: KeyPair
    ed25519: KeyPair
    #: The file it was loaded from or saved to, if any: pins live beside it by default.
    path: str | None = None


def create_identity(agent_id: str) -> Identity:
    """Fresh key pairs for ``agent_id`` (1 to 64 letters, digits, ``-``, ``_`` or ``.``)."""
    if not _AGENT_ID.match(agent_id):
        raise HandoffError(
            "INVALID_AGENT_ID",
            f"agent id '{agent_id}' must be 1 to 64 letters, digits, hyphens, underscores or dots",
        )
    return Identity(agent_id, generate_x25519_key_pair(), generate_ed25519_key_pair())


def identity_json(identity: Identity) -> str:
    """The identity file's text, as Node's saveIdentity writes it (two-space indent, newline)."""
    fields = {
        "agent_id": identity.agent_id,
        "x25519_private_key": to_base64(identity.x25519.private_key),
        "x25519_public_key": to_base64(identity.x25519.public_key),
        "ed25519_private_key": to_base64(identity.ed25519.private_key),
        "ed25519_public_key": to_base64(identity.ed25519.public_key),
    }
    return json.dumps(fields, indent=2, ensure_ascii=False) + "\n"


def save_identity(path: str, identity: Identity) -> None:
    """Writes the identity file (mode 0600, atomically) and remembers its path on ``identity``."""
    write_private_file(path, identity_json(identity))
    identity.path = path


def load_identity(path: str) -> Identity:
    """Reads an identity file; a missing, malformed or inconsistent file is ``INVALID_IDENTITY``."""

    def bad(why: str) -> HandoffError:
        return HandoffError("INVALID_IDENTITY", f"identity file {path}: {why}")

    try:
        with open(path, encoding="utf-8") as file:
            text = file.read()
    except FileNotFoundError:
        raise bad("no such file") from None
    except (OSError, UnicodeDecodeError) as error:
        raise bad(f"cannot be read ({error})") from None
    try:
        record = json.loads(text)
    except ValueError:
        raise bad("is not JSON") from None
    if not isinstance(record, dict):
        raise bad("is not a JSON object")

    def field(name: str) -> str:
        value = record.get(name)
        if not isinstance(value, str) or value == "":
            raise bad(f"field {name} is missing")
        return value

    def key(name: str) -> bytes:
        try:
            data = from_base64(field(name))
        except HandoffCryptoError:
            data = b""
        if len(data) != 32:
            raise bad(f"field {name} is not base64 of 32 bytes")
        return data

    agent_id = field("agent_id")
    if not _AGENT_ID.match(agent_id):
        raise bad(f"agent_id '{agent_id}' is not a valid agent id")
    identity = Identity(
        agent_id,
        KeyPair(key("x25519_private_key"), key("x25519_public_key")),
        KeyPair(key("ed25519_private_key"), key("ed25519_public_key")),
        path,
    )
    if x25519_public_key_of(identity.x25519.private_key) != identity.x25519.public_key:
        raise bad("x25519_public_key does not belong to x25519_private_key")
    if ed25519_public_key_of(identity.ed25519.private_key) != identity.ed25519.public_key:
        raise bad("ed25519_public_key does not belong to ed25519_private_key")
    return identity
