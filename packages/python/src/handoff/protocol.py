"""How the client talks HTTP, without doing any I/O: the sans-I/O half of every request.

A request is a generator that yields *effects*: an ``Attempt`` (one HTTP exchange, performed by
the synchronous or the asynchronous transport) or a ``Sleep``, and receives their outcome. The
retry rules live here once: an ``Idempotency-Key`` on every POST, ``Retry-After`` waited on 429,
bounded back-off where a repeat has no second effect, the API's error body as HandoffApiError.
"""

from __future__ import annotations

import email.utils
import json
import random
import time
import uuid
from collections.abc import Callable, Generator, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from .errors import HandoffApiError, HandoffError

BACKOFF_BASE_SECONDS = 0.25
BACKOFF_CAP_SECONDS = 8.0

#: A body made afresh for each attempt (a retry sends identical bytes again).
BodySource = Callable[[], Iterator[bytes]]
#: Where a streamed answer's body goes, chunk by chunk, when the answer is a success. A chunk may
#: be a view of a buffer the transport reuses for the next: the sink must not keep it.
Sink = Callable[[bytes | memoryview], None]


@dataclass
class RequestSpec:
    method: str
    #: A path under the base URL, or an absolute URL (a signed link, which carries no credential).
    url: str
    query: Mapping[str, str | int | None] = field(default_factory=dict)
    json: Any = None
    body: BodySource | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    accept: str | None = None
    #: Whether a network error or a 5xx may be retried: the step has no second effect.
    idempotent: bool = True
    #: The one Idempotency-Key of a logical POST, reused by its retries; made fresh when absent.
    idempotency_key: str | None = None
    #: Takes the body of a successful answer as it streams (downloads) instead of it being read.
    sink: Sink | None = None


@dataclass
class Settings:
    base_url: str
    api_key: str
    user_agent: str
    max_retries: int = 3
    #: Sent as X-Service-Agent (decisions 3.6): the inbox, downloads and profile are this agent's.
    agent_id: str | None = None


@dataclass
class Attempt:
    """One HTTP exchange for the transport to perform."""

    method: str
    url: str
    query: dict[str, str]
    headers: dict[str, str]
    json: Any
    body: BodySource | None
    sink: Sink | None


@dataclass
class Sleep:
    seconds: float


@dataclass
class Answer:
    status: int
    headers: Mapping[str, str]
    #: The body, read whole; empty when a sink took it.
    content: bytes

    def json(self) -> Any:
        return json.loads(self.content) if self.content else None


@dataclass
class NetworkFailure:
    """The exchange failed before an answer arrived (refused, reset, timed out)."""

    reason: str


@dataclass
class OpenStream:
    """Opens an answer that is read as it arrives (an event stream): the outcome is a StreamOpened
    for a 2xx, an Answer (body read) for anything else, or a NetworkFailure."""

    attempt: Attempt


@dataclass
class StreamOpened:
    status: int
    headers: Mapping[str, str]
    #: The transport's own handle of the open answer, given back in ReadStream and CloseStream.
    handle: object


@dataclass
class ReadStream:
    """The next bytes of an open stream: a non-empty chunk, b"" once it ended, or a NetworkFailure
    (it broke, or stayed silent past the transport's read time-out)."""

    handle: object


@dataclass
class CloseStream:
    handle: object


Effect = Attempt | Sleep | OpenStream | ReadStream | CloseStream
Outcome = Answer | NetworkFailure | StreamOpened | bytes | None
Flow = Generator[Effect, Any, Any]


def backoff_seconds(attempt: int) -> float:
    """Exponential back-off with full jitter: up to 0.25 s, then 0.5, 1… capped at 8 s."""
    ceiling: float = min(BACKOFF_CAP_SECONDS, BACKOFF_BASE_SECONDS * 2.0**attempt)
    return random.random() * ceiling


def retry_after_seconds(headers: Mapping[str, str], now: float | None = None) -> float:
    """Retry-After in seconds or as an HTTP date (RFC 9110 10.2.3); 1 s when absent or unreadable."""
    header: str | None = headers.get("retry-after")
    if header is None:
        return 1.0
    text = header.strip()
    if text.isdigit():
        return float(int(text))
    try:
        moment = email.utils.parsedate_to_datetime(text).timestamp()
    except (TypeError, ValueError):
        return 1.0
    return max(0.0, moment - (time.time() if now is None else now))


def api_error(status: int, content: bytes, reason: str = "") -> HandoffApiError:
    """The API's error body as a HandoffApiError; any other answer gets the code HTTP_<status>."""
    text = content.decode("utf-8", "replace")
    try:
        error = json.loads(text).get("error")
        if isinstance(error, dict) and isinstance(error.get("code"), str):
            message = error.get("message")
            return HandoffApiError(
                status,
                error["code"],
                message if isinstance(message, str) else f"HTTP {status}",
                details=error.get("details"),
                candidates=error.get("candidates"),
            )
    except (ValueError, AttributeError):
        pass  # not the API's JSON (a proxy's page, a storage service's XML)
    snippet = text[:200].strip()
    return HandoffApiError(
        status, f"HTTP_{status}", f"HTTP {status} {reason}".rstrip() + (f": {snippet}" if snippet else "")
    )


def _is_absolute(url: str) -> bool:
    return url.startswith("http://") or url.startswith("https://")


def prepare(spec: RequestSpec, settings: Settings, idempotency_key: str | None) -> Attempt:
    signed = _is_absolute(spec.url)
    headers = {"user-agent": settings.user_agent}
    # A signed link is its own credential: the API key never goes to storage or another host.
    if not signed:
        headers["authorization"] = f"Bearer {settings.api_key}"
        if settings.agent_id:
            headers["x-service-agent"] = settings.agent_id
    if idempotency_key:
        headers["idempotency-key"] = idempotency_key
    if spec.accept:
        headers["accept"] = spec.accept
    headers.update(spec.headers)
    return Attempt(
        method=spec.method,
        url=spec.url if signed else f"{settings.base_url}{spec.url}",
        query={name: str(value) for name, value in spec.query.items() if value is not None},
        headers=headers,
        json=spec.json,
        body=spec.body,
        sink=spec.sink,
    )


def request(spec: RequestSpec, settings: Settings) -> Generator[Effect, Outcome, Answer]:
    """Performs ``spec`` with the retry rules; answers the successful Answer or raises."""
    key = (spec.idempotency_key or str(uuid.uuid4())) if spec.method == "POST" else None
    attempt_spec = prepare(spec, settings, key)
    path = spec.url if not _is_absolute(spec.url) else spec.url.split("?", 1)[0]
    attempt = 0
    while True:
        last = attempt >= settings.max_retries
        outcome = yield attempt_spec
        if isinstance(outcome, NetworkFailure):
            if not spec.idempotent or last:
                raise HandoffError("NETWORK_ERROR", f"{spec.method} {path} failed: {outcome.reason}")
            yield Sleep(backoff_seconds(attempt))
            attempt += 1
            continue
        assert isinstance(outcome, Answer)
        if 200 <= outcome.status < 300:
            return outcome
        error = api_error(outcome.status, outcome.content)
        if last:
            raise error
        if outcome.status == 429:
            yield Sleep(retry_after_seconds(outcome.headers))
        elif spec.idempotent and (
            outcome.status >= 500 or (attempt > 0 and error.code == "IDEMPOTENCY_CONFLICT")
        ):
            # On a retry the body is the same, so a conflict means the first attempt still runs.
            yield Sleep(backoff_seconds(attempt))
        else:
            raise error
        attempt += 1


def open_stream(spec: RequestSpec, settings: Settings) -> Generator[Effect, Outcome, StreamOpened]:
    """Opens ``spec``'s answer as a stream, once (whoever reads it decides what a failure means)."""
    outcome = yield OpenStream(prepare(spec, settings, None))
    if isinstance(outcome, NetworkFailure):
        raise HandoffError("NETWORK_ERROR", f"{spec.method} {spec.url} failed: {outcome.reason}")
    if isinstance(outcome, Answer):
        raise api_error(outcome.status, outcome.content)
    assert isinstance(outcome, StreamOpened)
    return outcome


def call(spec: RequestSpec, settings: Settings) -> Generator[Effect, Outcome, Any]:
    """A request whose answer is JSON."""
    answer = yield from request(spec, settings)
    return answer.json()
