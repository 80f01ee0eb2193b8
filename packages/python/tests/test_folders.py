"""Folders (decisions 7.3): names relative to the folder's parent when sending, recreated inside the
output folder (never outside it) when receiving."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import Server, files_under

from handoff import Client, HandoffApiError, HandoffTransferError, create_identity, save_identity
from handoff.local import local_files


def test_a_folder_sends_its_regular_files_hidden_included_links_skipped(tmp_path: Path) -> None:
    top = tmp_path / "project"
    (top / "a" / "deep").mkdir(parents=True)
    (top / "a" / "deep" / "b.txt").write_text("b")
    (top / ".hidden").write_text("h")
    (top / "z.md").write_text("z")
    os.symlink(top / "z.md", top / "link.md")
    single = tmp_path / "single.txt"
    single.write_text("s")
    files = local_files([str(top), str(single)])
    assert [(f.name, f.size) for f in files] == [
        ("project/.hidden", 1),
        ("project/z.md", 1),
        ("project/a/deep/b.txt", 1),
        ("single.txt", 1),
    ]


def plain_transfer_stub(names: list[str]) -> httpx.MockTransport:
    files = [{"name": name, "size": 2, "type": "text/plain"} for name in names]
    transfer = {"id": "tr_f", "files": files, "is_encrypted": False, "mode": "agent-to-agent", "sender": "s", "recipient": "r"}
    served = [
        {"file_name": name, "download_url": f"http://blob/{i}", "size": 2, "encryption_iv": None}
        for i, name in enumerate(names)
    ]
    download: dict[str, Any] = {"id": "tr_f", "files": served, "is_encrypted": False}

    def handle(request: httpx.Request) -> httpx.Response:
        if request.url.host == "blob":
            return httpx.Response(200, content=b"hi")
        return httpx.Response(200, json=download if request.url.path.endswith("/download") else transfer)

    return httpx.MockTransport(handle)


def test_receiving_recreates_folders_inside_the_output_folder(tmp_path: Path) -> None:
    names = ["project/a/deep/b.txt", "project/z.md"]
    with Client("http://h", "k", http=httpx.Client(transport=plain_transfer_stub(names))) as client:
        result = client.receive("tr_f", str(tmp_path / "out"))
    assert [f["path"] for f in result["files"]] == [str(tmp_path / "out" / name) for name in names]
    assert (tmp_path / "out" / "project" / "a" / "deep" / "b.txt").read_bytes() == b"hi"


@pytest.mark.parametrize("name", ["../escape.txt", "a/../../b", "/etc/passwd", "a\\b", "a//b", "bad\x01name", "./x"])
def test_names_that_leave_the_output_folder_are_refused_with_nothing_written(tmp_path: Path, name: str) -> None:
    with Client("http://h", "k", http=httpx.Client(transport=plain_transfer_stub(["ok.txt", name]))) as client:
        with pytest.raises(HandoffTransferError) as refused:
            client.receive("tr_f", str(tmp_path / "out"))
    assert refused.value.code == "UNSAFE_FILE_NAME"
    assert files_under(tmp_path) == []


def test_sending_a_folder_to_todays_server(server: Server, tmp_path: Path) -> None:
    """The server refuses `/` in names until decisions 7.3 lands there; then the folder must arrive whole."""
    env = server.new_account()
    sender, receiver = create_identity("folder-sender"), create_identity("folder-receiver")
    for identity in (sender, receiver):
        save_identity(str(tmp_path / f"{identity.agent_id}.json"), identity)
    top = tmp_path / "docs"
    (top / "sub").mkdir(parents=True)
    (top / "sub" / "a.txt").write_text("a")
    with Client(env["HANDOFF_URL"], env["HANDOFF_API_KEY"], sender) as client:
        client.register_agent(sender)
        client.register_agent(receiver)
        try:
            transfer = client.send(receiver.agent_id, [str(top)])
        except HandoffApiError as refused:
            assert refused.code == "VALIDATION_ERROR"
            with Client(env["HANDOFF_URL"], env["HANDOFF_API_KEY"], receiver) as inbox:
                assert inbox.inbox()["transfers"] == []
            return
    with Client(env["HANDOFF_URL"], env["HANDOFF_API_KEY"], receiver) as client:
        result = client.receive(transfer["id"], str(tmp_path / "out"))
    assert result["files"][0]["path"] == str(tmp_path / "out" / "docs" / "sub" / "a.txt")
