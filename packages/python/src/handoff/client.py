"""``Client`` (synchronous) and ``AsyncClient``: one set of flows, two ways of doing the I/O.

Every operation is a generator of effects (protocol.py, sending.py, receiving.py, listening.py)
built by ``Operations``; transport.py performs each effect as steps (send, read a chunk, close,
wait) and decides everything about them. A client only says how a step is done: blocking through
``httpx.Client`` and ``time.sleep``, or awaiting ``httpx.AsyncClient`` and ``asyncio.sleep``.
Nothing about the API is written twice.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator
from typing import Any, Generic, Protocol, TypeVar
from urllib.parse import quote

import httpx

from . import __version__
from .errors import HandoffError
from .identity import Identity
from .listening import ListenOptions, listen_flow
from .pins import PinStore, default_pins_path, pin_name
from .protocol import Effect, Outcome, RequestSpec, Settings, call, open_stream, request
from .receiving import ReceiveOptions, ReceiveResult, receive_flow
from .sending import PRESIGNED_THRESHOLD, ProgressCallback, SendOptions, resume_send_flow, send_flow
from .crypto import to_base64
from .transport import DEFAULT_TIMEOUT, Step, drive, finished

Flow = Generator[Effect, Outcome, Any]
Out = TypeVar("Out")
Http = TypeVar("Http", httpx.Client, httpx.AsyncClient)


def _segment(text: str) -> str:
    return quote(text, safe="")


class Operations:
    """The SDK's operations as flows, for a client to run."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        identity: Identity | None,
        pins_path: str | None,
        user_agent: str | None,
        max_retries: int,
        presigned_threshold: int,
    ) -> None:
        self.identity = identity
        self.settings = Settings(
            base_url=base_url.rstrip("/"),
            api_key=api_key,
            user_agent=user_agent or f"handoff-sdk-python/{__version__}",
            max_retries=max_retries,
            agent_id=identity.agent_id if identity else None,
        )
        identity_path = identity.path if identity else None
        self.pins = PinStore(pins_path or (default_pins_path(identity_path) if identity_path else None))
        self.presigned_threshold = presigned_threshold

    def _call(self, method: str, url: str, **options: Any) -> Flow:
        return call(RequestSpec(method, url, **options), self.settings)

    def _require_identity(self, operation: str) -> Identity:
        if self.identity is None:
            raise HandoffError("IDENTITY_REQUIRED", f"{operation} needs the agent's identity")
        return self.identity

    def register_agent(self, identity: Identity, name: str | None, description: str | None) -> Flow:
        body: dict[str, Any] = {
            "agent_id": identity.agent_id,
            "public_key": to_base64(identity.x25519.public_key),
            "signing_public_key": to_base64(identity.ed25519.public_key),
        }
        if name is not None:
            body["name"] = name
        if description is not None:
            body["description"] = description
        return self._call("POST", "/v1/agents/register", json=body)

    def resolve(self, agent: str, account: str | None, accept_rotation: bool) -> Flow:
        resolved = yield from self._call(
            "GET", "/v1/agents/resolve", query={"agent_id": agent, "account": account}
        )
        return self.pins.check(pin_name(resolved["agent_id"], account), resolved, accept_rotation)

    def send(self, options: SendOptions) -> Flow:
        identity = self._require_identity("send")
        return send_flow(self.settings, identity, self.resolve, options, self.presigned_threshold)

    def resume_send(self, state: dict[str, Any], on_progress: ProgressCallback | None) -> Flow:
        return resume_send_flow(self.settings, state, on_progress)

    def inbox(self, wait: int | None, cursor: str | None, limit: int | None = None) -> Flow:
        query = {"wait": wait, "cursor": cursor, "limit": limit}
        return self._call("GET", "/v1/transfers/inbox", query=query)

    def whole_inbox(self, wait: int | None) -> Flow:
        """Every transfer in the inbox, page after page; only the first request waits."""
        page = yield from self.inbox(wait, None)
        transfers = list(page["transfers"])
        while page.get("has_more") and page.get("next_cursor"):
            page = yield from self.inbox(None, page["next_cursor"])
            transfers.extend(page["transfers"])
        return {"transfers": transfers}

    def transfer(self, transfer_id: str) -> Flow:
        return self._call("GET", f"/v1/transfers/{_segment(transfer_id)}")

    def receive(self, transfer_id: str, options: ReceiveOptions) -> Flow:
        return receive_flow(self.settings, self.identity, self.resolve, transfer_id, options)

    def inbox_events(self, after: str | None) -> Flow:
        """Opens the inbox's event stream (decisions 8.4) after ``after``; listening.py reads it."""
        spec = RequestSpec("GET", "/v1/transfers/inbox/events", query={"after": after}, accept="text/event-stream")
        return open_stream(spec, self.settings)

    def listen(self, out_dir: str, shield: str | None, options: ListenOptions) -> Flow:
        return listen_flow(
            lambda wait, cursor: self.inbox(wait, cursor),
            self.inbox_events,
            lambda transfer_id: self.receive(transfer_id, ReceiveOptions(out_dir, shield)),
            options,
        )

    def profile(self) -> Flow:
        return self._call("GET", "/v1/agents/me")

    def broadcasts(self, severity: str | None, limit: int | None, offset: int | None) -> Flow:
        query = {"severity": severity, "limit": limit, "offset": offset}
        return self._call("GET", "/v1/broadcasts", query=query)

    def mark_broadcast_read(self, broadcast_id: str) -> Flow:
        yield from request(RequestSpec("PUT", f"/v1/broadcasts/{_segment(broadcast_id)}/read"), self.settings)

    def connections(self) -> Flow:
        answer = yield from self._call("GET", "/v1/connections")
        return answer["connections"]

    def sendable(self) -> Flow:
        answer = yield from self._call("GET", "/v1/agents/sendable")
        return answer["agents"]


class Stoppable(Protocol):
    """What stops ``listen``: a ``threading.Event`` or an ``asyncio.Event``."""

    def is_set(self) -> bool: ...


class _Operations(Generic[Out, Http]):
    """The public operations, once: each runs its flow through the client's ``_do``, which answers
    the result (``Client``) or an awaitable of it (``AsyncClient``).

    ``http`` takes your own httpx client (proxies, a mock transport); ``presigned_threshold`` is the
    size on the wire from which a send goes presigned; pins default to beside the identity file.
    """

    def __init__(
        self,
        base_url: str,
        api_key: str,
        identity: Identity | None = None,
        *,
        pins_path: str | None = None,
        user_agent: str | None = None,
        max_retries: int = 3,
        presigned_threshold: int = PRESIGNED_THRESHOLD,
        http: Http | None = None,
    ) -> None:
        self.ops = Operations(
            base_url, api_key, identity, pins_path, user_agent, max_retries, presigned_threshold
        )
        self._http: Http = http or self._new_http()

    def _new_http(self) -> Http:
        raise NotImplementedError

    def _do(self, flow: Flow) -> Out:
        raise NotImplementedError

    def register_agent(self, identity: Identity, name: str | None = None, description: str | None = None) -> Out:
        """Registers ``identity``'s agent one-shot with both public keys; answers the agent."""
        return self._do(self.ops.register_agent(identity, name, description))

    def resolve(self, agent: str, account: str | None = None, accept_rotation: bool = False) -> Out:
        """An agent's public keys, checked against the pins (``KEY_CHANGED`` unless accepted)."""
        return self._do(self.ops.resolve(agent, account, accept_rotation))

    def send(
        self,
        to: str,
        paths: list[str],
        *,
        account: str | None = None,
        message: str | None = None,
        max_downloads: int | None = None,
        expires_in: str | None = None,
        auto_delete: bool | None = None,
        plain: bool = False,
        accept_rotation: bool = False,
        on_progress: ProgressCallback | None = None,
        on_started: Callable[[dict[str, Any]], None] | None = None,
    ) -> Out:
        """Sends files (or folders), encrypted and signed unless ``plain``; answers the transfer.

        ``on_started`` hears of a presigned transfer before its first byte, with the state
        ``resume_send`` needs to finish it after a crash (decisions 7.2)."""
        options = SendOptions(
            to,
            paths,
            account,
            message,
            max_downloads,
            expires_in,
            auto_delete,
            plain,
            accept_rotation,
            on_progress,
            on_started,
        )
        return self._do(self.ops.send(options))

    def resume_send(self, state: dict[str, Any], on_progress: ProgressCallback | None = None) -> Out:
        """Finishes an interrupted presigned send from the state ``send`` gave ``on_started``: each
        file from the server's offset, then confirm; answers the transfer."""
        return self._do(self.ops.resume_send(state, on_progress))

    def inbox(self, wait: int | None = None, cursor: str | None = None, limit: int | None = None) -> Out:
        """One inbox page ``{transfers, next_cursor, has_more}``; ``wait`` long-polls up to 30 s."""
        return self._do(self.ops.inbox(wait, cursor, limit))

    def whole_inbox(self, wait: int | None = None) -> Out:
        """``{transfers}``: every page of the inbox (what ``handoff inbox`` prints)."""
        return self._do(self.ops.whole_inbox(wait))

    def transfer(self, transfer_id: str) -> Out:
        return self._do(self.ops.transfer(transfer_id))

    def receive(
        self,
        transfer_id: str,
        out_dir: str,
        *,
        shield: str | None = None,
        accept_rotation: bool = False,
        on_progress: ProgressCallback | None = None,
    ) -> Out:
        """Verifies, downloads, decrypts and scans a transfer into ``out_dir``."""
        return self._do(self.ops.receive(transfer_id, ReceiveOptions(out_dir, shield, accept_rotation, on_progress)))

    def listen(
        self,
        out_dir: str,
        *,
        shield: str | None = None,
        cursor: str | None = None,
        stop: Stoppable | None = None,
        on_received: Callable[[ReceiveResult], None] | None = None,
        on_failed: Callable[[str, Exception], None] | None = None,
        on_error: Callable[[Exception], None] | None = None,
    ) -> Out:
        """Receives each new transfer as it arrives, until ``stop`` is set (checked between polls)
        or, with AsyncClient, the task is cancelled."""
        options = ListenOptions(cursor, on_received, on_failed, on_error, stop.is_set if stop else lambda: False)
        return self._do(self.ops.listen(out_dir, shield, options))

    def profile(self) -> Out:
        """The startup profile (``GET /v1/agents/me``)."""
        return self._do(self.ops.profile())

    def broadcasts(self, severity: str | None = None, limit: int | None = None, offset: int | None = None) -> Out:
        return self._do(self.ops.broadcasts(severity, limit, offset))

    def mark_broadcast_read(self, broadcast_id: str) -> Out:
        return self._do(self.ops.mark_broadcast_read(broadcast_id))

    def connections(self) -> Out:
        return self._do(self.ops.connections())

    def sendable(self) -> Out:
        return self._do(self.ops.sendable())


class Client(_Operations[Any, httpx.Client]):
    """The Handoff API as an agent uses it, synchronously. See docs/python.md."""

    #: Whether this client made its httpx client (then downloads go through download.py).
    _own_http = False

    def _new_http(self) -> httpx.Client:
        self._own_http = True
        return httpx.Client(timeout=DEFAULT_TIMEOUT)

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def _do(self, flow: Flow) -> Any:
        return self.run(flow)

    def run(self, flow: Flow) -> Any:
        """Performs each effect the flow yields until it finishes; answers its result."""
        return finished(drive(flow, self._own_http, self._run_step))

    async def _run_step(self, step: Step) -> Any:
        return step.run(self._http)  # blocks: never waits on an event loop (see transport.finished)


class AsyncClient(_Operations[Awaitable[Any], httpx.AsyncClient]):
    """The same operations as ``Client``, for asyncio: each answers an awaitable of its result."""

    def _new_http(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(timeout=DEFAULT_TIMEOUT)

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    def _do(self, flow: Flow) -> Awaitable[Any]:
        return self.run(flow)

    async def run(self, flow: Flow) -> Any:
        """Performs each effect the flow yields until it finishes (or the task is cancelled, which
        the flow's cleanup sees); answers its result."""
        return await drive(flow, False, self._run_step)

    async def _run_step(self, step: Step) -> Any:
        return await step.arun(self._http)
