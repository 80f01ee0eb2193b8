"""Sends from 8 MiB go through resumable_url and resume a dropped upload (decisions 7.2), against
the real server: a transport in front of httpx's own cuts the connection mid-PATCH."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from conftest import Run, Server, run_node, run_python

from handoff import Client, HandoffError, Identity, create_identity, save_identity
from handoff.crypto import encrypt_chunks, new_content_key
from handoff.local import LocalFile
from handoff.sending import MAX_STALLED_ATTEMPTS, RESUMABLE_FROM, encrypted_file_chunks, outgoing

MiB = 1024 * 1024


class _CutStream(httpx.SyncByteStream):
    """A request body that breaks off after ``limit`` bytes, as a dropped connection does."""

    def __init__(self, inner: httpx.SyncByteStream, limit: int) -> None:
        self.inner, self.limit = inner, limit

    def __iter__(self) -> Iterator[bytes]:
        sent = 0
        for chunk in self.inner:
            if sent + len(chunk) >= self.limit:
                yield chunk[: self.limit - sent]
                break
            sent += len(chunk)
            yield chunk
        raise httpx.WriteError("connection cut by the test")


class CuttingTransport(httpx.BaseTransport):
    """httpx's own transport, except that the PATCHes ``cuts`` names break off after that many
    bytes (the first PATCH takes the first number, and so on): the server gets them, then the
    connection closes. ``patches`` records where each PATCH started."""

    def __init__(self, cuts: list[int]) -> None:
        self.inner = httpx.HTTPTransport()
        self.cuts = list(cuts)
        self.patches: list[int] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.method == "PATCH":
            self.patches.append(int(request.headers["upload-offset"]))
            if self.cuts:
                assert isinstance(request.stream, httpx.SyncByteStream)
                request.stream = _CutStream(request.stream, self.cuts.pop(0))
        return self.inner.handle_request(request)

    def close(self) -> None:
        self.inner.close()


@dataclass
class Parties:
    env: dict[str, str]
    sender: Identity
    receiver: Identity

    def sending_through(self, transport: CuttingTransport) -> Client:
        http = httpx.Client(transport=transport, timeout=60)
        return Client(self.env["HANDOFF_URL"], self.env["HANDOFF_API_KEY"], self.sender, http=http)

    def receiving(self) -> Client:
        return Client(self.env["HANDOFF_URL"], self.env["HANDOFF_API_KEY"], self.receiver)


@pytest.fixture
def parties(server: Server) -> Parties:
    env = server.new_account()
    sender, receiver = create_identity("resume-sender"), create_identity("resume-receiver")
    with Client(env["HANDOFF_URL"], env["HANDOFF_API_KEY"], sender) as client:
        client.register_agent(sender)
        client.register_agent(receiver)
        # Waits (really) until the log has signed the receiver's keys (decisions 9.6): a test that
        # stubs time.sleep below would otherwise not wait for the key proof at all.
        client.resolve(receiver.agent_id)
    return Parties(env, sender, receiver)


@pytest.mark.parametrize("plain", [False, True], ids=["encrypted", "plain"])
def test_a_cut_upload_goes_on_from_the_servers_offset_and_arrives_byte_exact(
    parties: Parties, tmp_path: Path, plain: bool
) -> None:
    data = os.urandom(12 * MiB + 5)
    path = tmp_path / "big.bin"
    path.write_bytes(data)
    # Cuts inside records (and inside a tag), not on their boundaries.
    transport = CuttingTransport([3 * MiB + 7, 5 * MiB + 65_545])
    with parties.sending_through(transport) as client:
        transfer = client.send(parties.receiver.agent_id, [str(path)], plain=plain)
    assert transfer["status"] == "active"
    assert transfer["is_encrypted"] is not plain
    # Three PATCHes: each after a cut starts where the server's bytes end, never back at zero.
    first, second, third = transport.patches
    assert first == 0
    assert 0 < second <= 3 * MiB + 7
    assert second <= third <= second + 5 * MiB + 65_545
    assert third > 0
    with parties.receiving() as receiver:
        result = receiver.receive(transfer["id"], str(tmp_path / "out"))
    assert Path(result["files"][0]["path"]).read_bytes() == data


def test_gives_up_after_attempts_in_a_row_that_move_nothing(
    parties: Parties, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(time, "sleep", lambda _seconds: None)
    path = tmp_path / "stuck.bin"
    path.write_bytes(os.urandom(RESUMABLE_FROM))
    transport = CuttingTransport([0] * 10)
    with parties.sending_through(transport) as client:
        with pytest.raises(HandoffError) as failed:
            client.send(parties.receiver.agent_id, [str(path)], plain=True)
    assert failed.value.code == "NETWORK_ERROR"
    assert f"no progress in {MAX_STALLED_ATTEMPTS} attempts in a row" in str(failed.value)
    assert f"0 of {RESUMABLE_FROM} bytes" in str(failed.value)
    assert transport.patches == [0] * MAX_STALLED_ATTEMPTS


def test_the_encrypted_bytes_from_any_offset_are_the_rest_of_those_from_the_start(tmp_path: Path) -> None:
    size = 2 * MiB + 3 * 65536 + 5
    plain = os.urandom(size)
    path = tmp_path / "file.bin"
    path.write_bytes(plain)
    key, salt = new_content_key(), os.urandom(16)
    whole = b"".join(encrypt_chunks([plain], key, salt))
    record = 65536 + 16
    for offset in (0, 10, 24, 24 + record, 24 + record + 1, 24 + 2 * record - 3, 24 + 35 * record + 2):
        rest = b"".join(encrypted_file_chunks(str(path), size, key, salt, lambda _done: None, offset))
        assert rest == whole[offset:], offset
    out = outgoing(LocalFile(str(path), "file.bin", "application/octet-stream", size, 0.0), (key, salt), None)
    assert b"".join(out.open_from(24 + record + 1)) == whole[24 + record + 1 :]


def keep_state(identity_file: Path, state: dict[str, object]) -> Path:
    """The state file where ``handoff send`` keeps it (decisions 7.2): ``<identity>.sends/<id>.json``, 0600."""
    path = Path(f"{identity_file}.sends") / f"{state['transfer_id']}.json"
    path.parent.mkdir(mode=0o700, exist_ok=True)
    path.write_text(json.dumps(state))
    path.chmod(0o600)
    return path


@pytest.mark.parametrize("cli", [run_python, run_node], ids=["python", "node"])
def test_send_resume_of_either_cli_finishes_a_send_that_gave_up(
    parties: Parties, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cli: Callable[[list[str], dict[str, str]], Run]
) -> None:
    monkeypatch.setattr(time, "sleep", lambda _seconds: None)
    identity_file = tmp_path / "sender.json"
    save_identity(str(identity_file), parties.sender)
    data = os.urandom(9 * MiB + 1)
    path = tmp_path / "big.bin"
    path.write_bytes(data)
    states: list[dict[str, object]] = []
    with parties.sending_through(CuttingTransport([0] * MAX_STALLED_ATTEMPTS)) as client:
        with pytest.raises(HandoffError):
            client.send(parties.receiver.agent_id, [str(path)], on_started=states.append)
    [state] = states
    # The same state as the Node SDK's: the transfer, each file's path and resumable_url, and K.
    assert list(state) == ["transfer_id", "expires_at", "content_key", "files"]
    assert isinstance(state["files"], list)
    assert state["files"][0]["path"] == str(path)
    state_file = keep_state(identity_file, state)
    transfer_id = str(state["transfer_id"])

    resume = ["send", "--resume", transfer_id, "--identity", str(identity_file)]
    finished = cli(resume, parties.env)
    assert finished.status == 0, finished.stderr
    assert finished.json()["status"] == "active"
    assert not state_file.parent.exists()
    with parties.receiving() as receiver:
        result = receiver.receive(transfer_id, str(tmp_path / "out"))
    assert Path(result["files"][0]["path"]).read_bytes() == data

    keep_state(identity_file, state)
    again = cli(resume, parties.env)
    assert again.status == 1
    assert again.stderr == (
        f"transfer {transfer_id} was already confirmed (status active): nothing is left to send (ALREADY_CONFIRMED)\n"
    )
    assert not state_file.exists()
    missing = cli(["send", "--resume", "tr_nothingtoresume", "--identity", str(identity_file)], parties.env)
    assert missing.status == 1
    assert missing.stderr == (
        f"no interrupted send of tr_nothingtoresume for {identity_file} ({identity_file}.sends/tr_nothingtoresume.json "
        "does not exist): it completed, or it was sent with another identity file (NO_SEND_STATE)\n"
    )


def test_the_python_cli_removes_its_state_once_the_send_is_confirmed(parties: Parties, tmp_path: Path) -> None:
    identity_file = tmp_path / "sender.json"
    save_identity(str(identity_file), parties.sender)
    path = tmp_path / "whole.bin"
    path.write_bytes(os.urandom(9 * MiB))
    sent = run_python(["send", "--identity", str(identity_file), "--to", parties.receiver.agent_id, str(path)], parties.env)
    assert sent.status == 0, sent.stderr
    assert sent.json()["status"] == "active"
    assert not Path(f"{identity_file}.sends").exists()
