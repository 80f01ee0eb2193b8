"""``Client`` (synchronous) and ``AsyncClient``: one set of flows, two ways of doing the I/O.

Every operation is a generator of effects (protocol.py, sending.py, receiving.py, listening.py)
built by ``Operations``; transport.py performs each effect as steps (send, read a chunk, close,
wait) and decides everything about them. A client only says how a step is done: blocking through
``httpx.Client`` and ``time.sleep``, or awaiting ``httpx.AsyncClient`` and ``asyncio.sleep``.
Nothing about the API is written twice.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Awaitable, Callable, Generator
from datetime import datetime, timezone
from typing import Any, Concatenate, Generic, ParamSpec, Protocol, TypedDict, TypeVar, overload
from urllib.parse import quote

import httpx

from . import __version__
from .api_types import (
    BroadcastPage,
    ConfirmedRequestTransfer,
    Connection,
    ConnectionList,
    InboxPage,
    IssuedRequestLink,
    Profile,
    RegisteredAgent,
    RequestLink,
    RequestLinkList,
    ResolvedAgent,
    SendableAgent,
    SendableAgentList,
    Transfer,
)
from .crypto import to_base64
from .custody import LogWitness, check_answer, default_log_path, is_person, witness_log
from .errors import HandoffError
from .identity import Identity
from .listening import ListenOptions, listen_flow
from .local import file_state, local_files
from .pins import PinStore, default_pins_path, pin_name
from .protocol import Effect, Outcome, RequestSpec, Settings, Sleep, StreamOpened, call, open_stream, request
from .receiving import ReceiveOptions, ReceiveResult, receive_flow
from .requesting import RequestSendOptions, send_to_request_flow
from .sending import PRESIGNED_THRESHOLD, ProgressCallback, SendOptions, resume_send_flow, send_flow
from .transport import DEFAULT_TIMEOUT, Step, drive, finished

T = TypeVar("T")
P = ParamSpec("P")
#: An operation as a generator of effects whose result is a T.
Flow = Generator[Effect, Outcome, T]
Http = TypeVar("Http", httpx.Client, httpx.AsyncClient)

#: A checkpoint covers an agent's new keys within about a second (decisions 9.2): wait that long.
KEY_PROOF_ATTEMPTS = 12
KEY_PROOF_RETRY_SECONDS = 0.25


class WholeInbox(TypedDict):
    """Every page of the inbox at once: what ``handoff inbox`` prints."""

    transfers: list[Transfer]


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
        log_path: str | None = None,
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
        self.log = LogWitness(self.settings, log_path or (default_log_path(identity_path) if identity_path else None))
        self.presigned_threshold = presigned_threshold

    def _call(self, method: str, url: str, **options: Any) -> Flow[Any]:
        return call(RequestSpec(method, url, **options), self.settings)

    def _require_identity(self, operation: str) -> Identity:
        if self.identity is None:
            raise HandoffError("IDENTITY_REQUIRED", f"{operation} needs the agent's identity")
        return self.identity

    def register_agent(self, identity: Identity, name: str | None, description: str | None) -> Flow[RegisteredAgent]:
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

    def resolve(self, agent: str, account: str | None, accept_rotation: bool) -> Flow[ResolvedAgent]:
        """An agent's keys, proven by the transparency log (decisions 9.6) and pinned: the answer's
        key_proof must prove the very keys answered in a checkpoint signed by the log key pinned at
        first use and consistent with every checkpoint seen before, else HandoffCustodyError."""
        resolved = yield from self._resolve_proven(agent, account)
        proven = yield from check_answer(self.log, resolved)
        return self.pins.check(pin_name(resolved["agent_id"], account), resolved, accept_rotation, proven)

    def _resolve_proven(self, agent: str, account: str | None) -> Flow[ResolvedAgent]:
        """The resolve answer, asked again for a moment while the log has not yet signed new keys."""
        attempt = 0
        while True:
            resolved: ResolvedAgent = yield from self._call("GET", "/v1/agents/resolve", query={"agent_id": agent, "account": account})
            waiting = resolved.get("key_proof") is None and resolved.get("public_key") is not None
            if not waiting or is_person(resolved) or attempt >= KEY_PROOF_ATTEMPTS:
                return resolved
            attempt += 1
            yield Sleep(KEY_PROOF_RETRY_SECONDS)

    def witness_log(self) -> Flow[dict[str, Any]]:
        """Fetches the newest checkpoint and holds it to the one kept (decisions 9.7)."""
        return witness_log(self.settings, self.log)

    # The shell's part of a send: what the file system holds and the time are read here, when the
    # operation is asked for, and the flows get them as arguments.

    def send(self, options: SendOptions) -> Flow[Transfer]:
        identity = self._require_identity("send")
        files = local_files(options.paths)
        return send_flow(self.settings, identity, self.resolve, options, files, self.presigned_threshold)

    def resume_send(self, state: dict[str, Any], on_progress: ProgressCallback | None) -> Flow[Transfer]:
        found = [file_state(entry["path"]) for entry in state["files"]]
        return resume_send_flow(self.settings, state, found, datetime.now(timezone.utc), on_progress)

    def inbox(self, wait: int | None, cursor: str | None, limit: int | None = None) -> Flow[InboxPage]:
        query = {"wait": wait, "cursor": cursor, "limit": limit}
        return self._call("GET", "/v1/transfers/inbox", query=query)

    def whole_inbox(self, wait: int | None) -> Flow[WholeInbox]:
        """Every transfer in the inbox, page after page; only the first request waits."""
        page = yield from self.inbox(wait, None)
        transfers = list(page["transfers"])
        while page["has_more"] and page["next_cursor"]:
            page = yield from self.inbox(None, page["next_cursor"])
            transfers.extend(page["transfers"])
        return {"transfers": transfers}

    def transfer(self, transfer_id: str) -> Flow[Transfer]:
        return self._call("GET", f"/v1/transfers/{_segment(transfer_id)}")

    def receive(self, transfer_id: str, options: ReceiveOptions) -> Flow[ReceiveResult]:
        return receive_flow(self.settings, self.identity, self.resolve, transfer_id, options)

    def inbox_events(self, after: str | None) -> Flow[StreamOpened]:
        """Opens the inbox's event stream (decisions 8.4) after ``after``; listening.py reads it."""
        spec = RequestSpec("GET", "/v1/transfers/inbox/events", query={"after": after}, accept="text/event-stream")
        return open_stream(spec, self.settings)

    def listen(
        self,
        out_dir: str,
        shield: str | None,
        options: ListenOptions,
        receipt: bool = True,
        on_receipt: Callable[[dict[str, Any]], None] | None = None,
    ) -> Flow[None]:
        # Each result is told as soon as its files are in place, before its receipt goes: a listener
        # stopped while the service records a receipt has still reported what it wrote.
        def receive(transfer_id: str) -> Flow[ReceiveResult]:
            receiving = ReceiveOptions(
                out_dir, shield, receipt=receipt, on_receipt=on_receipt, on_placed=options.on_received
            )
            return self.receive(transfer_id, receiving)

        told_early = dataclasses.replace(options, on_received=None)
        return listen_flow(lambda wait, cursor: self.inbox(wait, cursor), self.inbox_events, receive, told_early)

    def profile(self) -> Flow[Profile]:
        return self._call("GET", "/v1/agents/me")

    def broadcasts(self, severity: str | None, limit: int | None, offset: int | None) -> Flow[BroadcastPage]:
        query = {"severity": severity, "limit": limit, "offset": offset}
        return self._call("GET", "/v1/broadcasts", query=query)

    def mark_broadcast_read(self, broadcast_id: str) -> Flow[None]:
        yield from request(RequestSpec("PUT", f"/v1/broadcasts/{_segment(broadcast_id)}/read"), self.settings)

    def connections(self) -> Flow[list[Connection]]:
        answer: ConnectionList = yield from self._call("GET", "/v1/connections")
        return answer["connections"]

    def sendable(self) -> Flow[list[SendableAgent]]:
        answer: SendableAgentList = yield from self._call("GET", "/v1/agents/sendable")
        return answer["agents"]

    def create_request(self, terms: dict[str, Any]) -> Flow[IssuedRequestLink]:
        body = {name: value for name, value in terms.items() if value is not None}
        return self._call("POST", "/v1/requests", json=body)

    def list_requests(self) -> Flow[list[RequestLink]]:
        answer: RequestLinkList = yield from self._call("GET", "/v1/requests")
        return answer["requests"]

    def revoke_request(self, request_id: str) -> Flow[RequestLink]:
        return self._call("DELETE", f"/v1/requests/{_segment(request_id)}")

    def send_to_request(self, options: RequestSendOptions) -> Flow[ConfirmedRequestTransfer]:
        return send_to_request_flow(self.settings, self._log_of, options, lambda: local_files(options.paths))

    def _log_of(self, service: str) -> LogWitness:
        """This client's log view for a link of its own service; for another service's link, a
        view of that service's log pinned for this one send, since holding checkpoints to earlier
        ones takes consistency proofs, which need an account there (decisions 9.3)."""
        if service == self.settings.base_url:
            return self.log
        return LogWitness(self.settings, None, service)


class Stoppable(Protocol):
    """What stops ``listen``: a ``threading.Event`` or an ``asyncio.Event``."""

    def is_set(self) -> bool: ...


class operation(Generic[P, T]):
    """A public operation, defined once as the flow it builds: on a ``Client`` it answers the flow's
    result, on an ``AsyncClient`` an awaitable of it; ``mypy`` sees which from the client's type."""

    def __init__(self, build: Callable[Concatenate[_Operations[Any], P], Flow[T]]) -> None:
        self._build = build
        functools.update_wrapper(self, build)

    @overload
    def __get__(self, client: None, owner: type[object]) -> operation[P, T]: ...
    @overload
    def __get__(self, client: Client, owner: type[object]) -> Callable[P, T]: ...
    @overload
    def __get__(self, client: AsyncClient, owner: type[object]) -> Callable[P, Awaitable[T]]: ...
    def __get__(self, client: _Operations[Any] | None, owner: type[object]) -> Any:
        if client is None:
            return self
        runner, build = client, self._build

        @functools.wraps(build)
        def run(*args: P.args, **kwargs: P.kwargs) -> Any:
            return runner._do(build(runner, *args, **kwargs))

        return run


class _Operations(Generic[Http]):
    """The public operations, once: each builds its flow, which the client's ``_do`` runs to the
    result (``Client``) or an awaitable of it (``AsyncClient``).

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
        log_path: str | None = None,
    ) -> None:
        self.ops = Operations(
            base_url, api_key, identity, pins_path, user_agent, max_retries, presigned_threshold, log_path
        )
        self._http: Http = http or self._new_http()

    def _new_http(self) -> Http:
        raise NotImplementedError

    def _do(self, flow: Flow[Any]) -> Any:
        raise NotImplementedError

    @operation
    def register_agent(
        self, identity: Identity, name: str | None = None, description: str | None = None
    ) -> Flow[RegisteredAgent]:
        """Registers ``identity``'s agent one-shot with both public keys; answers the agent."""
        return self.ops.register_agent(identity, name, description)

    @operation
    def resolve(self, agent: str, account: str | None = None, accept_rotation: bool = False) -> Flow[ResolvedAgent]:
        """An agent's public keys, checked against the pins (``KEY_CHANGED`` unless accepted)."""
        return self.ops.resolve(agent, account, accept_rotation)

    @operation
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
    ) -> Flow[Transfer]:
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
        return self.ops.send(options)

    @operation
    def resume_send(self, state: dict[str, Any], on_progress: ProgressCallback | None = None) -> Flow[Transfer]:
        """Finishes an interrupted presigned send from the state ``send`` gave ``on_started``: each
        file from the server's offset, then confirm; answers the transfer."""
        return self.ops.resume_send(state, on_progress)

    @operation
    def inbox(self, wait: int | None = None, cursor: str | None = None, limit: int | None = None) -> Flow[InboxPage]:
        """One inbox page ``{transfers, next_cursor, has_more}``; ``wait`` long-polls up to 30 s."""
        return self.ops.inbox(wait, cursor, limit)

    @operation
    def whole_inbox(self, wait: int | None = None) -> Flow[WholeInbox]:
        """``{transfers}``: every page of the inbox (what ``handoff inbox`` prints)."""
        return self.ops.whole_inbox(wait)

    @operation
    def transfer(self, transfer_id: str) -> Flow[Transfer]:
        return self.ops.transfer(transfer_id)

    @operation
    def receive(
        self,
        transfer_id: str,
        out_dir: str,
        *,
        shield: str | None = None,
        accept_rotation: bool = False,
        on_progress: ProgressCallback | None = None,
        receipt: bool = True,
        on_receipt: Callable[[dict[str, Any]], None] | None = None,
    ) -> Flow[ReceiveResult]:
        """Verifies, downloads, decrypts and scans a transfer into ``out_dir``; then signs and posts
        a receipt (decisions 9.5) unless ``receipt=False``, telling ``on_receipt`` what became of it
        (``{position, leaf_index}`` or ``{error}``: a refused receipt never fails the receive)."""
        options = ReceiveOptions(out_dir, shield, accept_rotation, on_progress, receipt, on_receipt)
        return self.ops.receive(transfer_id, options)

    @operation
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
        receipt: bool = True,
        on_receipt: Callable[[dict[str, Any]], None] | None = None,
    ) -> Flow[None]:
        """Receives each new transfer as it arrives, until ``stop`` is set (checked between polls)
        or, with AsyncClient, the task is cancelled; each gets a receipt unless ``receipt=False``."""
        options = ListenOptions(cursor, on_received, on_failed, on_error, stop.is_set if stop else lambda: False)
        return self.ops.listen(out_dir, shield, options, receipt, on_receipt)

    @operation
    def profile(self) -> Flow[Profile]:
        """The startup profile (``GET /v1/agents/me``)."""
        return self.ops.profile()

    @operation
    def broadcasts(
        self, severity: str | None = None, limit: int | None = None, offset: int | None = None
    ) -> Flow[BroadcastPage]:
        return self.ops.broadcasts(severity, limit, offset)

    @operation
    def mark_broadcast_read(self, broadcast_id: str) -> Flow[None]:
        return self.ops.mark_broadcast_read(broadcast_id)

    @operation
    def connections(self) -> Flow[list[Connection]]:
        return self.ops.connections()

    @operation
    def sendable(self) -> Flow[list[SendableAgent]]:
        return self.ops.sendable()

    @operation
    def create_request(
        self,
        title: str,
        *,
        message: str | None = None,
        agent: str | None = None,
        max_files: int | None = None,
        max_total_size: int | None = None,
        expires_in: str | None = None,
        max_uses: int | None = None,
        ask_sender_name: bool | None = None,
        ask_sender_email: bool | None = None,
    ) -> Flow[IssuedRequestLink]:
        """A request link to ``agent`` (default: this client's identity's agent, else the account's
        first): anyone holding it may send that agent files, encrypted to its key (decisions 10.1).
        The answer's ``token`` and ``url`` are shown this once."""
        terms = {
            "title": title,
            "message": message,
            "agent": agent,
            "max_files": max_files,
            "max_total_size": max_total_size,
            "expires_in": expires_in,
            "max_uses": max_uses,
            "ask_sender_name": ask_sender_name,
            "ask_sender_email": ask_sender_email,
        }
        return self.ops.create_request(terms)

    @operation
    def list_requests(self) -> Flow[list[RequestLink]]:
        """The account's request links, newest first (never their tokens)."""
        return self.ops.list_requests()

    @operation
    def revoke_request(self, request_id: str) -> Flow[RequestLink]:
        """Revokes a request link: it answers 410 REQUEST_CLOSED from now on."""
        return self.ops.revoke_request(request_id)

    @operation
    def send_to_request(
        self,
        link: str,
        paths: list[str],
        *,
        sender_name: str | None = None,
        sender_email: str | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> Flow[ConfirmedRequestTransfer]:
        """Answers someone's request link with files (or folders): encrypted to the agent the link
        names once the transparency log proves its key (HandoffCustodyError otherwise, nothing
        sent), with the link's token alone; answers ``{transfer_id, status}``."""
        return self.ops.send_to_request(RequestSendOptions(link, paths, sender_name, sender_email, on_progress))

    @operation
    def witness_log(self) -> Flow[dict[str, Any]]:
        """Fetches the log's newest checkpoint, checks it extends the one kept (beside the identity,
        or ``log_path``) and keeps it: ``{origin, size, root}``; LOG_FORKED otherwise (decisions 9.7)."""
        return self.ops.witness_log()


class Client(_Operations[httpx.Client]):
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

    def _do(self, flow: Flow[Any]) -> Any:
        return self.run(flow)

    def run(self, flow: Flow[T]) -> T:
        """Performs each effect the flow yields until it finishes; answers its result."""
        return finished(drive(flow, self._own_http, self._run_step))

    async def _run_step(self, step: Step) -> Any:
        return step.run(self._http)  # blocks: never waits on an event loop (see transport.finished)


class AsyncClient(_Operations[httpx.AsyncClient]):
    """The same operations as ``Client``, for asyncio: each answers an awaitable of its result."""

    def _new_http(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(timeout=DEFAULT_TIMEOUT)

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    def _do(self, flow: Flow[Any]) -> Awaitable[Any]:
        return self.run(flow)

    async def run(self, flow: Flow[T]) -> T:
        """Performs each effect the flow yields until it finishes (or the task is cancelled, which
        the flow's cleanup sees); answers its result."""
        return await drive(flow, False, self._run_step)

    async def _run_step(self, step: Step) -> Any:
        return await step.arun(self._http)
