"""The inbox event stream (decisions 8.4) in listen: read as it arrives, resumed after the last
event's id when it ends, the long-poll when the server has no stream; against a stub transport,
and against the real server through the CLI."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from conftest import PythonListener, Server, run_python, wait_until
from test_cli import identity
from handoff import AsyncClient, Client
from handoff.api_types import Transfer
from handoff.listening import ListenOptions, arrivals_flow

EVENTS = "/v1/transfers/inbox/events"


def transfer(identifier: str) -> dict[str, Any]:
    return {"id": identifier, "status": "active", "downloads": 0}


def frame(identifier: str, position: str) -> bytes:
    return f"event: transfer.received\nid: {position}\ndata: {json.dumps(transfer(identifier))}\n\n".encode()


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_events_are_read_resumed_after_the_last_id_and_long_polled_when_the_stream_is_gone(kind: str) -> None:
    seen: list[httpx.Request] = []
    arrived: list[str] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        streams = [r for r in seen if r.url.path == EVENTS]
        if request.url.path == EVENTS and len(streams) == 1:
            body = b": keep-alive\n\n" + frame("tr_1", "p1") + b": keep-alive\n\n" + frame("tr_2", "p2")
            return httpx.Response(200, headers={"content-type": "text/event-stream; charset=utf-8"}, content=body)
        if request.url.path == EVENTS:
            return httpx.Response(404, json={"error": {"code": "NOT_FOUND", "message": "no route", "status": 404}})
        return httpx.Response(200, json={"transfers": [transfer("tr_3")], "next_cursor": "p3", "has_more": False})

    def on_arrival(item: Transfer) -> Any:
        arrived.append(item["id"])
        return
        yield

    options = ListenOptions(cursor="p0", should_stop=lambda: len(arrived) >= 3)
    transport = httpx.MockTransport(handle)
    if kind == "sync":
        with Client("http://h", "key", http=httpx.Client(transport=transport)) as client:
            client.run(arrivals_flow(client.ops.inbox, client.ops.inbox_events, on_arrival, options))
    else:
        async_client = AsyncClient("http://h", "key", http=httpx.AsyncClient(transport=transport))
        flow = arrivals_flow(async_client.ops.inbox, async_client.ops.inbox_events, on_arrival, options)
        asyncio.run(async_client.run(flow))

    assert arrived == ["tr_1", "tr_2", "tr_3"]
    paths = [(r.url.path, dict(r.url.params)) for r in seen]
    assert paths == [
        (EVENTS, {"after": "p0"}),
        # The stream ended after it delivered: opened again at once, after the last event's id.
        (EVENTS, {"after": "p2"}),
        # 404: no stream here; the long-poll goes on from the same position.
        ("/v1/transfers/inbox", {"wait": "30", "cursor": "p2"}),
    ]
    assert seen[0].headers["accept"] == "text/event-stream"


def test_cli_listen_receives_through_the_event_stream(server: Server, tmp_path: Path) -> None:
    env = server.new_account()
    sender, _ = identity(env, tmp_path, "s-sender")
    receiver, receiver_slug = identity(env, tmp_path, "s-receiver")
    log = server.data_dir / "server.log"
    start = len(log.read_text())

    def requests() -> str:
        """The server's request log since this test began."""
        return log.read_text()[start:]
    out = tmp_path / "streamed"
    listener = PythonListener(receiver, out, env)
    try:
        assert wait_until(lambda: EVENTS in requests(), 60), "listen opened no event stream"
        note = tmp_path / "note.txt"
        note.write_text("through the stream")
        sent = run_python(["send", "--identity", str(sender), "--to", receiver_slug, str(note)], env).json()
        wait_until((out / "note.txt").exists, 60)
        assert (out / "note.txt").read_text() == "through the stream"
    finally:
        stopped = listener.stop()
    assert stopped.status == 0
    assert [json.loads(line)["transfer_id"] for line in stopped.stdout.splitlines()] == [sent["id"]]
    # Received from the stream: no long-poll was made.
    assert "wait=30" not in requests()
