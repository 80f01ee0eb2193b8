"""The HTTP rules, against a stub transport: Retry-After, Idempotency-Key, retries, typed errors."""

from __future__ import annotations

import asyncio
import http.server
import threading
from pathlib import Path

import httpx
import pytest

import time
from handoff import AsyncClient, Client, HandoffApiError, HandoffError, create_identity
from handoff import download
from handoff.protocol import Attempt, retry_after_seconds


def stub(answers: list[httpx.Response], seen: list[httpx.Request]) -> httpx.MockTransport:
    def handle(request: httpx.Request) -> httpx.Response:
        request.read()
        seen.append(request)
        return answers.pop(0)

    return httpx.MockTransport(handle)


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    waited: list[float] = []
    monkeypatch.setattr(time, "sleep", waited.append)
    return waited


def test_429_waits_retry_after_and_retries_with_the_same_idempotency_key(sleeps: list[float]) -> None:
    seen: list[httpx.Request] = []
    answers = [
        httpx.Response(429, headers={"retry-after": "7"}, json={"error": {"code": "RATE_LIMITED", "message": "slow"}}),
        httpx.Response(503, text="busy"),
        httpx.Response(201, json={"id": "a"}),
    ]
    identity = create_identity("agent-a")
    with Client("http://h", "key", http=httpx.Client(transport=stub(answers, seen))) as client:
        assert client.register_agent(identity) == {"id": "a"}
    assert sleeps[0] == 7.0 and 0 <= sleeps[1] <= 0.5
    keys = {request.headers["idempotency-key"] for request in seen}
    assert len(keys) == 1 and len(seen) == 3
    assert seen[0].headers["authorization"] == "Bearer key"


def test_every_post_has_its_own_idempotency_key_and_gets_have_none(sleeps: list[float]) -> None:
    seen: list[httpx.Request] = []
    answers = [httpx.Response(201, json={}), httpx.Response(201, json={}), httpx.Response(200, json={})]
    with Client("http://h", "key", http=httpx.Client(transport=stub(answers, seen))) as client:
        client.register_agent(create_identity("a"))
        client.register_agent(create_identity("b"))
        client.profile()
    assert seen[0].headers["idempotency-key"] != seen[1].headers["idempotency-key"]
    assert "idempotency-key" not in seen[2].headers


def test_api_errors_are_typed_with_the_apis_code(sleeps: list[float]) -> None:
    seen: list[httpx.Request] = []
    body = {"error": {"code": "AMBIGUOUS_RECIPIENT", "message": "which one?", "candidates": [{"account_id": "x"}]}}
    answers = [httpx.Response(409, json=body), httpx.Response(502, text="<html>bad gateway</html>")]
    with Client("http://h", "key", http=httpx.Client(transport=stub(answers, seen)), max_retries=0) as client:
        with pytest.raises(HandoffApiError) as refused:
            client.resolve("bob")
        assert (refused.value.status, refused.value.code, refused.value.candidates) == (409, "AMBIGUOUS_RECIPIENT", [{"account_id": "x"}])
        with pytest.raises(HandoffApiError) as other:
            client.profile()
        assert other.value.code == "HTTP_502" and "bad gateway" in other.value.message
    assert sleeps == []


def test_a_download_that_counts_is_not_retried_on_a_network_error(tmp_path: Path, sleeps: list[float]) -> None:
    calls: list[str] = []

    def handle(request: httpx.Request) -> httpx.Response:
        calls.append(request.url.path)
        if request.url.path.endswith("/download"):
            raise httpx.ConnectError("reset")
        return httpx.Response(200, json={"id": "t", "files": [], "is_encrypted": False, "sender": "s", "recipient": "r", "mode": "agent-to-agent"})

    with Client("http://h", "key", http=httpx.Client(transport=httpx.MockTransport(handle))) as client:
        with pytest.raises(HandoffError) as failed:
            client.receive("t", str(tmp_path))
    assert failed.value.code == "NETWORK_ERROR"
    assert calls == ["/v1/transfers/t", "/v1/transfers/t/download"]


def test_retry_after_as_an_http_date() -> None:
    assert retry_after_seconds({"retry-after": "Thu, 01 Jan 2026 00:00:10 GMT"}, now=1767225600.0) == 10.0
    assert retry_after_seconds({}) == 1.0
    assert retry_after_seconds({"retry-after": "soon"}) == 1.0


def test_the_async_client_runs_the_same_flows(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[httpx.Request] = []
    answers = [httpx.Response(429, headers={"retry-after": "0"}, json={}), httpx.Response(200, json={"agent": {"agent_id": "a"}})]

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return answers.pop(0)

    async def main() -> object:
        async with AsyncClient("http://h", "key", http=httpx.AsyncClient(transport=httpx.MockTransport(handle))) as client:
            return await client.profile()

    assert asyncio.run(main()) == {"agent": {"agent_id": "a"}}
    assert len(seen) == 2


class _ShortBody(http.server.BaseHTTPRequestHandler):
    """Declares 100 bytes, sends 10, closes: a connection cut mid-download."""

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("content-length", "100")
        self.end_headers()
        self.wfile.write(b"0123456789")
        self.close_connection = True

    def log_message(self, *_: object) -> None:
        pass


def test_a_download_cut_short_is_a_network_error_not_a_shorter_file() -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _ShortBody)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    received: list[bytes] = []
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/blob?sig=x"
        attempt = Attempt("GET", url, {}, {"user-agent": "t"}, None, None, received.append)
        with pytest.raises(HandoffError) as failed:
            download.download(attempt, 10)
        assert failed.value.code == "NETWORK_ERROR"
        assert b"".join(received) == b"0123456789"
    finally:
        server.shutdown()
        server.server_close()
