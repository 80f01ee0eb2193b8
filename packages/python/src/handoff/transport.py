"""How an effect of protocol.py is performed, decided once for ``Client`` and ``AsyncClient``.

``perform`` turns one effect (an HTTP exchange, a sleep, opening, reading or closing an event
stream) into *steps*: send a request, take the next chunk of an answer, read an answer whole,
close it, wait, or fetch a signed link through http.client. Each step is one call, with a
blocking ``run`` and an awaiting ``arun``, and decides nothing. Everything else is decided here:
a transport error before an answer is a NetworkFailure for the retry rules to judge, one while a
successful body streams into its sink is NETWORK_ERROR, a 2xx streams into the sink while any
other answer is read whole, an opened event stream stays open, every answer read is closed.

``drive`` is the one loop that runs a flow: it performs each effect the flow yields through the
client's step runner and sends the outcome back in, or throws in what the step raised (a
cancellation too), so the flow's cleanup runs. It is a coroutine; ``finished`` runs it to its end
at once for ``Client``, whose steps never wait on an event loop.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Generator, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx

from . import download
from .errors import HandoffError
from .protocol import (
    Answer,
    Attempt,
    CloseStream,
    Effect,
    NetworkFailure,
    OpenStream,
    Outcome,
    ReadStream,
    Sleep,
    StreamOpened,
)

DOWNLOAD_TIMEOUT_SECONDS = 90.0
DEFAULT_TIMEOUT = httpx.Timeout(DOWNLOAD_TIMEOUT_SECONDS, connect=15.0)
#: The server sends a keep-alive every 15 s: an event stream silent for 45 s is dead.
STREAM_TIMEOUT = httpx.Timeout(45.0, connect=15.0)

Result = TypeVar("Result")


class StreamHandle:
    """An answer read as it arrives: its chunks through ``httpx``'s sync or async iterator."""

    def __init__(self, response: httpx.Response) -> None:
        self.response = response
        self._chunks: Iterator[bytes] | None = None
        self._async_chunks: AsyncIterator[bytes] | None = None

    @staticmethod
    def of(handle: object) -> StreamHandle:
        assert isinstance(handle, StreamHandle)
        return handle

    def next_chunk(self) -> bytes:
        self._chunks = self._chunks or self.response.iter_bytes()
        return next(self._chunks, b"")

    async def anext_chunk(self) -> bytes:
        self._async_chunks = self._async_chunks or self.response.aiter_bytes()
        return await anext(self._async_chunks, b"")


def _request(
    http: httpx.Client | httpx.AsyncClient, attempt: Attempt, content: Any, timeout: httpx.Timeout | None
) -> httpx.Request:
    return http.build_request(
        attempt.method,
        attempt.url,
        params=attempt.query or None,
        headers=attempt.headers,
        json=attempt.json,
        content=content,
        timeout=timeout or httpx.USE_CLIENT_DEFAULT,
    )


async def _async_body(chunks: Iterator[bytes]) -> AsyncIterator[bytes]:
    for chunk in chunks:
        yield chunk


# The steps: one call each, blocking (run) or awaiting (arun).


@dataclass
class Send:
    """Sends the attempt's request; answers the response, its body not yet read."""

    attempt: Attempt
    timeout: httpx.Timeout | None = None

    def run(self, http: httpx.Client) -> httpx.Response:
        body = self.attempt.body() if self.attempt.body else None
        return http.send(_request(http, self.attempt, body, self.timeout), stream=True)

    async def arun(self, http: httpx.AsyncClient) -> httpx.Response:
        body = _async_body(self.attempt.body()) if self.attempt.body else None
        return await http.send(_request(http, self.attempt, body, self.timeout), stream=True)


@dataclass
class NextChunk:
    """The next bytes of a streamed answer; b"" once it ended."""

    stream: StreamHandle

    def run(self, _: httpx.Client) -> bytes:
        return self.stream.next_chunk()

    async def arun(self, _: httpx.AsyncClient) -> bytes:
        return await self.stream.anext_chunk()


@dataclass
class ReadWhole:
    response: httpx.Response

    def run(self, _: httpx.Client) -> bytes:
        return self.response.read()

    async def arun(self, _: httpx.AsyncClient) -> bytes:
        return await self.response.aread()


@dataclass
class Close:
    response: httpx.Response

    def run(self, _: httpx.Client) -> None:
        self.response.close()

    async def arun(self, _: httpx.AsyncClient) -> None:
        await self.response.aclose()


@dataclass
class Wait:
    seconds: float

    def run(self, _: httpx.Client) -> None:
        time.sleep(self.seconds)

    async def arun(self, _: httpx.AsyncClient) -> None:
        await asyncio.sleep(self.seconds)


@dataclass
class DirectDownload:
    """A signed link fetched through http.client (download.py), for ``Client`` only: a blocking
    read of a large body has no place on an event loop, so ``AsyncClient`` never asks for one."""

    attempt: Attempt

    def run(self, _: httpx.Client) -> Outcome:
        return download.download(self.attempt, DOWNLOAD_TIMEOUT_SECONDS)

    async def arun(self, _: httpx.AsyncClient) -> Outcome:
        raise AssertionError("AsyncClient drives with direct_downloads=False")


Step = Send | NextChunk | ReadWhole | Close | Wait | DirectDownload
Steps = Generator[Step, Any, Result]


def _network_reason(error: Exception) -> str:
    return str(error) or type(error).__name__


def _unless_broken(step: Step) -> Steps[Any]:
    """The step's result, or a NetworkFailure when the transport fails under it."""
    try:
        return (yield step)
    except httpx.TransportError as error:
        return NetworkFailure(_network_reason(error))


def _read_answer(response: httpx.Response) -> Steps[Answer | NetworkFailure]:
    content = yield from _unless_broken(ReadWhole(response))
    if isinstance(content, NetworkFailure):
        return content
    return Answer(response.status_code, response.headers, content)


def _into_sink(attempt: Attempt, stream: StreamHandle) -> Steps[Answer]:
    """A successful answer's body, chunk by chunk, into the attempt's sink (a download)."""
    assert attempt.sink is not None
    try:
        while chunk := (yield NextChunk(stream)):
            attempt.sink(chunk)
    except httpx.TransportError as error:
        # Bytes already went to the sink: this is no retry's to judge.
        path = httpx.URL(attempt.url).path
        raise HandoffError("NETWORK_ERROR", f"{attempt.method} {path} failed: {_network_reason(error)}") from None
    return Answer(stream.response.status_code, stream.response.headers, b"")


def _then_close(response: httpx.Response, steps: Steps[Result]) -> Steps[Result]:
    try:
        return (yield from steps)
    finally:
        yield Close(response)


def _exchange(attempt: Attempt) -> Steps[Outcome]:
    response = yield from _unless_broken(Send(attempt))
    if isinstance(response, NetworkFailure):
        return response
    if response.is_success and attempt.sink is not None:
        return (yield from _then_close(response, _into_sink(attempt, StreamHandle(response))))
    return (yield from _then_close(response, _read_answer(response)))


def _open_stream(attempt: Attempt) -> Steps[Outcome]:
    """A 2xx stays open, for ReadStream and CloseStream; any other answer is read and closed."""
    response = yield from _unless_broken(Send(attempt, STREAM_TIMEOUT))
    if isinstance(response, NetworkFailure):
        return response
    if response.is_success:
        return StreamOpened(response.status_code, response.headers, StreamHandle(response))
    return (yield from _then_close(response, _read_answer(response)))


def perform(effect: Effect, direct_downloads: bool) -> Steps[Outcome]:
    """The steps of one effect; answers its outcome. ``direct_downloads``: signed links go
    through http.client (download.py) unless a proxy applies to them."""
    if isinstance(effect, Sleep):
        yield Wait(effect.seconds)
        return None
    if isinstance(effect, OpenStream):
        return (yield from _open_stream(effect.attempt))
    if isinstance(effect, ReadStream):
        chunk: bytes | NetworkFailure = yield from _unless_broken(NextChunk(StreamHandle.of(effect.handle)))
        return chunk
    if isinstance(effect, CloseStream):
        yield Close(StreamHandle.of(effect.handle).response)
        return None
    if effect.sink is not None and direct_downloads and not download.proxied(effect.url):
        downloaded: Outcome = yield DirectDownload(effect)
        return downloaded
    return (yield from _exchange(effect))


async def _answering(requests: Generator[Any, Any, Result], act: Callable[[Any], Awaitable[Any]]) -> Result:
    """Runs a generator of requests: each is acted on and its answer sent back in; what acting
    raised (a cancellation too) is thrown in instead, so the generator's cleanup runs."""
    answer: Any = None
    error: BaseException | None = None
    while True:
        try:
            request = requests.throw(error) if error is not None else requests.send(answer)
        except StopIteration as stop:
            result: Result = stop.value
            return result
        answer, error = None, None
        try:
            answer = await act(request)
        except BaseException as raised:
            error = raised


async def drive(
    flow: Generator[Effect, Outcome, Result], direct_downloads: bool, run_step: Callable[[Step], Awaitable[Any]]
) -> Result:
    """Runs ``flow`` to its result, each effect performed by its steps through ``run_step``."""
    return await _answering(flow, lambda effect: _answering(perform(effect, direct_downloads), run_step))


def finished(coroutine: Coroutine[Any, Any, Result]) -> Result:
    """The result of a coroutine that never waits on an event loop (``Client``'s steps block
    instead), run to its end at once: the one loop of ``drive`` serves both clients."""
    try:
        coroutine.send(None)
    except StopIteration as stop:
        result: Result = stop.value
        return result
    coroutine.close()
    raise RuntimeError("a step of the synchronous client waited on an event loop")
