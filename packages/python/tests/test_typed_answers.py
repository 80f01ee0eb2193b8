"""The client answers the API's types (handoff/api_types.py, generated from docs/openapi.json):
``mypy --strict`` checks the ``assert_type`` lines below, the runs check the values. And the
sending flows take the file system's state and the time as arguments (the shell reads them)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Generator
from datetime import datetime, timedelta, timezone
from typing import Any, assert_type

import httpx
import pytest

from handoff import AsyncClient, Client, HandoffError
from handoff.api_types import Connection, InboxPage, ResolvedAgent, Transfer
from handoff.client import WholeInbox
from handoff.local import FileState
from handoff.protocol import Answer, Attempt, Settings
from handoff.sending import resume_send_flow

TRANSFER: Transfer = {
    "id": "tr_1",
    "url": "http://h/t/tr_1",
    "api_url": "http://h/v1/transfers/tr_1",
    "status": "active",
    "pending_reason": None,
    "mode": "agent-to-agent",
    "request_id": None,
    "sender": "alice",
    "recipient": "bob",
    "files": [{"name": "a.txt", "size": 3, "type": "text/plain"}],
    "file_count": 1,
    "total_size": 3,
    "max_downloads": 1,
    "downloads": 0,
    "is_encrypted": False,
    "auto_delete": False,
    "message": None,
    "created_at": "2026-11-28T10:00:00.000Z",
    "expires_at": "2026-11-29T10:00:00.000Z",
}
# A person's receiving key: an agent's would need a key proof the transparency log backs (decisions
# 9.6), which test_custody.py checks; the types are the same.
RESOLVED: ResolvedAgent = {
    "agent_id": "bob@example.com",
    "public_key": "q1v9Tq4mXo5b3n1d6QmJt2yCk6g0Yw4oH2rj5m8Yb2c=",
    "public_key_algorithm": "X25519",
    "key_version": 1,
    "signing_public_key": None,
    "connection_status": "connected",
    "key_proof": None,
}


def answer(request: httpx.Request) -> httpx.Response:
    path = request.url.path
    if path == "/v1/transfers/tr_1":
        return httpx.Response(200, json=TRANSFER)
    if path == "/v1/transfers/inbox":
        return httpx.Response(200, json={"transfers": [TRANSFER], "next_cursor": None, "has_more": False})
    if path == "/v1/agents/resolve":
        return httpx.Response(200, json=RESOLVED)
    return httpx.Response(200, json={"connections": []})


def test_the_sync_client_answers_the_apis_types() -> None:
    with Client("http://h", "key", http=httpx.Client(transport=httpx.MockTransport(answer))) as client:
        transfer = assert_type(client.transfer("tr_1"), Transfer)
        page = assert_type(client.inbox(), InboxPage)
        whole = assert_type(client.whole_inbox(), WholeInbox)
        resolved = assert_type(client.resolve("bob@example.com"), ResolvedAgent)
        connections = assert_type(client.connections(), list[Connection])
    assert transfer["files"][0]["name"] == "a.txt"
    assert page["transfers"][0]["id"] == whole["transfers"][0]["id"] == "tr_1"
    assert resolved["key_version"] == 1 and connections == []


def test_the_async_client_answers_awaitables_of_the_same_types() -> None:
    async def run() -> Transfer:
        http = httpx.AsyncClient(transport=httpx.MockTransport(answer))
        async with AsyncClient("http://h", "key", http=http) as client:
            pending = assert_type(client.transfer("tr_1"), Awaitable[Transfer])
            return await pending

    assert asyncio.run(run())["status"] == "active"


def test_the_public_methods_keep_their_names_and_docstrings() -> None:
    assert Client.receive.__doc__ == AsyncClient.receive.__doc__
    assert "Verifies, downloads, decrypts and scans" in (Client.receive.__doc__ or "")
    with Client("http://h", "key", http=httpx.Client(transport=httpx.MockTransport(answer))) as client:
        assert client.send.__name__ == "send" and "encrypted and signed" in (client.send.__doc__ or "")


STATE: dict[str, Any] = {
    "transfer_id": "tr_1",
    "expires_at": "2026-11-28T12:00:00.000Z",
    "content_key": None,
    "files": [
        {"path": "/nowhere/a.bin", "name": "a.bin", "size": 10, "modified_ms": 1000.0, "resumable_url": "http://h/u"}
    ],
}
SETTINGS = Settings("http://h", "key", "test")


def refusal(flow: Generator[Any, Any, Any]) -> str:
    """The code a resume refuses with after the server says the transfer is still pending."""
    assert isinstance(next(flow), Attempt)
    with pytest.raises(HandoffError) as refused:
        flow.send(Answer(200, {}, json.dumps({"status": "pending"}).encode()))
    return refused.value.code


def test_a_resume_is_judged_on_the_time_and_the_files_it_is_given() -> None:
    """No clock and no disk in the flow: the expiry and the changed file follow from the arguments."""
    expires = datetime(2026, 11, 28, 12, tzinfo=timezone.utc)
    same = FileState(regular=True, size=10, modified_ms=1000.4)
    after = expires + timedelta(milliseconds=1)
    assert refusal(resume_send_flow(SETTINGS, STATE, [same], after)) == "TRANSFER_EXPIRED"
    before = expires - timedelta(minutes=1)
    for changed in (None, FileState(True, 11, 1000.0), FileState(True, 10, 1002.0), FileState(False, 10, 1000.0)):
        assert refusal(resume_send_flow(SETTINGS, STATE, [changed], before)) == "FILE_CHANGED"
    going_on = resume_send_flow(SETTINGS, STATE, [same], before)
    next(going_on)
    asked = going_on.send(Answer(200, {}, json.dumps({"status": "pending"}).encode()))
    assert isinstance(asked, Attempt) and (asked.method, asked.url) == ("HEAD", "http://h/u")
