"""Receiving refuses what 5.3, 5.4 and pinning refuse, and then has written nothing."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from conftest import Server, files_under, new_slug

from handoff import Client, HandoffError, HandoffKeyChangedError, create_identity, save_identity
from handoff.crypto import HEADER_SIZE, RECORD_SIZE, TAG_SIZE, KeyPair, encrypted_size, generate_ed25519_key_pair
from handoff.identity import Identity

SEALED = RECORD_SIZE + TAG_SIZE


class Agents:
    def __init__(self, server: Server, work: Path) -> None:
        self.server = server
        self.env = server.new_account()
        self.work = work
        self.sender = self.agent("sender")
        self.receiver = self.agent("receiver")

    def identity(self, prefix: str) -> Identity:
        identity = create_identity(new_slug(prefix))
        save_identity(str(self.work / f"{identity.agent_id}.json"), identity)
        return identity

    def client(self, identity: Identity | None = None) -> Client:
        return Client(self.env["HANDOFF_URL"], self.env["HANDOFF_API_KEY"], identity)

    def agent(self, prefix: str) -> Identity:
        identity = self.identity(prefix)
        with self.client() as client:
            client.register_agent(identity)
        return identity

    def send(self, size: int, sender: Identity | None = None) -> tuple[str, Path]:
        path = self.work / f"file-{os.urandom(3).hex()}.bin"
        path.write_bytes(os.urandom(size))
        with self.client(sender or self.sender) as client:
            return client.send(self.receiver.agent_id, [str(path)])["id"], path


@pytest.fixture(scope="module")
def agents(server: Server, tmp_path_factory: pytest.TempPathFactory) -> Agents:
    return Agents(server, tmp_path_factory.mktemp("refusals"))


def stored(agents: Agents, transfer_id: str) -> Path:
    [blob] = list((agents.server.data_dir / "blobs" / "transfers" / transfer_id).iterdir())
    return blob


def flip(data: bytes) -> bytes:
    changed = bytearray(data)
    changed[HEADER_SIZE + SEALED + 3] ^= 1
    return bytes(changed)


def reorder(data: bytes) -> bytes:
    first, second = data[HEADER_SIZE : HEADER_SIZE + SEALED], data[HEADER_SIZE + SEALED : HEADER_SIZE + 2 * SEALED]
    return data[:HEADER_SIZE] + second + first + data[HEADER_SIZE + 2 * SEALED :]


CHANGES: dict[str, tuple[Callable[[bytes], bytes], str]] = {
    "tampered": (flip, "BAD_TAG"),
    "truncated at a record boundary": (lambda data: data[: HEADER_SIZE + 2 * SEALED], "TRUNCATED"),
    "truncated mid-record": (lambda data: data[:-100], "BAD_TAG"),
    "reordered": (reorder, "BAD_TAG"),
    "extended": (lambda data: data + b"\0" * 16, "BAD_TAG"),
}


@pytest.mark.parametrize("change", list(CHANGES))
def test_a_changed_stored_file_is_refused_and_nothing_is_written(agents: Agents, tmp_path: Path, change: str) -> None:
    alter, code = CHANGES[change]
    transfer_id, _ = agents.send(3 * RECORD_SIZE + 500)
    blob = stored(agents, transfer_id)
    assert blob.stat().st_size == encrypted_size(3 * RECORD_SIZE + 500)
    blob.write_bytes(alter(blob.read_bytes()))
    out = tmp_path / "new" / "out"
    with agents.client(agents.receiver) as client, pytest.raises(HandoffError) as refused:
        client.receive(transfer_id, str(out))
    assert refused.value.code == code
    assert not (tmp_path / "new").exists()  # not even the folders it made


def test_an_extended_full_last_record_is_trailing_data(agents: Agents, tmp_path: Path) -> None:
    transfer_id, _ = agents.send(2 * RECORD_SIZE)
    blob = stored(agents, transfer_id)
    blob.write_bytes(blob.read_bytes() + b"more")
    with agents.client(agents.receiver) as client, pytest.raises(HandoffError) as refused:
        client.receive(transfer_id, str(tmp_path))
    assert refused.value.code == "TRAILING_DATA"
    assert files_under(tmp_path) == []


def test_a_wrong_signature_is_refused_before_any_byte(agents: Agents, tmp_path: Path) -> None:
    # The sender's agent id with another signing key: the signature cannot verify against its pinned key.
    impostor = Identity(agents.sender.agent_id, agents.sender.x25519, generate_ed25519_key_pair())
    transfer_id, _ = agents.send(1000, sender=impostor)
    with agents.client(agents.receiver) as client, pytest.raises(HandoffError) as refused:
        client.receive(transfer_id, str(tmp_path / "out"))
    assert refused.value.code == "SIGNATURE_INVALID"
    assert files_under(tmp_path) == []


def test_a_changed_key_is_refused_unless_the_rotation_is_accepted(agents: Agents, tmp_path: Path) -> None:
    rotating = agents.agent("rotating")
    with agents.client(agents.sender) as sender:
        sender.resolve(rotating.agent_id)  # pinned on first use
        with agents.client() as account:
            agent = account.resolve(rotating.agent_id)
            listed = httpx.get(
                f"{agents.env['HANDOFF_URL']}/v1/agents",
                headers={"authorization": f"Bearer {agents.env['HANDOFF_API_KEY']}"},
            ).json()
            [uuid] = [a["id"] for a in listed["agents"] if a["agent_id"] == agent["agent_id"]]
            httpx.delete(
                f"{agents.env['HANDOFF_URL']}/v1/agents/{uuid}",
                headers={"authorization": f"Bearer {agents.env['HANDOFF_API_KEY']}"},
            ).raise_for_status()
            account.register_agent(create_identity(rotating.agent_id))  # the same slug, new keys
        path = tmp_path / "a.txt"
        path.write_text("a")
        with pytest.raises(HandoffKeyChangedError) as refused:
            sender.send(rotating.agent_id, [str(path)])
        assert refused.value.code == "KEY_CHANGED"
        assert refused.value.pinned["key_version"] == 1 and refused.value.current["key_version"] == 2
        transfer = sender.send(rotating.agent_id, [str(path)], accept_rotation=True)
        assert transfer["is_encrypted"] is True
        assert sender.resolve(rotating.agent_id)["key_version"] == 2  # the new keys are pinned now


def test_a_key_pair_not_its_own_is_refused_as_bad_key(agents: Agents, tmp_path: Path) -> None:
    transfer_id, _ = agents.send(10)
    stranger = Identity(agents.receiver.agent_id, KeyPair(os.urandom(32), agents.receiver.x25519.public_key), agents.receiver.ed25519)
    with agents.client(stranger) as client, pytest.raises(HandoffError) as refused:
        client.receive(transfer_id, str(tmp_path))
    assert refused.value.code == "BAD_KEY"
    assert files_under(tmp_path) == []
