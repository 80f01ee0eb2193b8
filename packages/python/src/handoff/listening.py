"""``listen``: each new transfer received once as it arrives, until stopped.

The transfers come from the inbox's event stream (decisions 8.4), else from the long-poll, as the
Node SDK's inbox-events.ts does it: a stream that drops after it delivered is opened again at once
after the last event's id; one that cannot be opened, that drops with nothing delivered, or that
stays silent past the transport's read time-out gives way to one long-poll round from the same
position, then the stream is tried again; a server that answers 404 or 406 is long-polled from
then on. Event ids and page cursors are the same positions, so nothing is missed or repeated.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Generator
from dataclasses import dataclass
from .api_types import InboxPage, Transfer
from .errors import HandoffApiError, HandoffError
from .event_stream import EventStreamParser
from .protocol import CloseStream, Effect, NetworkFailure, Outcome, ReadStream, Sleep, StreamOpened, backoff_seconds
from .receiving import ReceiveResult

#: The longest long-poll the API allows (decisions 3.11).
LONG_POLL_SECONDS = 30
#: Credentials that no longer work do not heal by waiting: listen stops on them.
FATAL_STATUSES = (401, 403)
#: A server without the stream (older, or behind a proxy that refuses it): long-poll for good.
NO_STREAM_STATUSES = (404, 406)
#: Decisions 8.4: the event the stream sends for each transfer.
TRANSFER_RECEIVED = "transfer.received"

InboxFlow = Callable[[int, "str | None"], Generator[Effect, Outcome, InboxPage]]
StreamFlow = Callable[["str | None"], Generator[Effect, Outcome, StreamOpened]]
ReceiveFlow = Callable[[str], Generator[Effect, Outcome, ReceiveResult]]
ArrivalFlow = Callable[[Transfer], Generator[Effect, Outcome, None]]


@dataclass
class ListenOptions:
    cursor: str | None = None
    on_received: Callable[[ReceiveResult], None] | None = None
    #: A transfer that could not be received: it is skipped, never tried again by this loop.
    on_failed: Callable[[str, Exception], None] | None = None
    #: The inbox could not be read: the loop waits (backing off) and tries again.
    on_error: Callable[[Exception], None] | None = None
    should_stop: Callable[[], bool] = lambda: False


@dataclass
class _Reading:
    """Where the loop is in the inbox, and whether the current stream has delivered."""

    position: str | None
    delivered: bool = False


def listen_flow(
    inbox: InboxFlow, stream: StreamFlow, receive: ReceiveFlow, options: ListenOptions
) -> Generator[Effect, Outcome, None]:
    seen: set[str] = set()

    def arrived(transfer: Transfer) -> Generator[Effect, Outcome, None]:
        identifier = transfer["id"]
        if identifier in seen or transfer.get("status") != "active" or transfer.get("downloads", 0) > 0:
            return
        seen.add(identifier)
        try:
            result = yield from receive(identifier)
        except Exception as error:
            if options.on_failed is not None:
                options.on_failed(identifier, error)
            return
        if options.on_received is not None:
            options.on_received(result)

    yield from arrivals_flow(inbox, stream, arrived, options)


def arrivals_flow(
    inbox: InboxFlow, stream: StreamFlow, arrived: ArrivalFlow, options: ListenOptions
) -> Generator[Effect, Outcome, None]:
    """Runs ``arrived`` for every transfer that reaches the inbox, in order, until stopped."""
    reading = _Reading(options.cursor)
    streaming = True
    failures = 0
    while not options.should_stop():
        if streaming:
            reading.delivered = False
            try:
                yield from _streamed(stream, arrived, reading, options)
            except HandoffApiError as error:
                if error.status in FATAL_STATUSES:
                    raise
                if error.status in NO_STREAM_STATUSES:
                    streaming = False
                elif options.on_error is not None:
                    options.on_error(error)
            except HandoffError as error:  # the network
                if options.on_error is not None:
                    options.on_error(error)
            if reading.delivered:
                continue
        try:
            page = yield from inbox(LONG_POLL_SECONDS, reading.position)
            failures = 0
        except HandoffApiError as error:
            if error.status in FATAL_STATUSES:
                raise
            failures = yield from _report_and_wait(options, error, failures)
            continue
        except Exception as error:  # the network: wait and try again
            failures = yield from _report_and_wait(options, error, failures)
            continue
        for transfer in page.get("transfers", []):
            if options.should_stop():
                return
            yield from arrived(transfer)
        reading.position = page.get("next_cursor") or reading.position


def _streamed(
    stream: StreamFlow, arrived: ArrivalFlow, reading: _Reading, options: ListenOptions
) -> Generator[Effect, Outcome, None]:
    """One event stream's transfers, until it ends, fails or the loop is stopped."""
    opened = yield from stream(reading.position)
    try:
        if not opened.headers.get("content-type", "").startswith("text/event-stream"):
            raise HandoffApiError(406, "NOT_ACCEPTABLE", "the server answered the event stream with no events")
        parser = EventStreamParser()
        while not options.should_stop():
            chunk = yield ReadStream(opened.handle)
            if isinstance(chunk, NetworkFailure):
                raise HandoffError("NETWORK_ERROR", f"the inbox event stream broke: {chunk.reason}")
            assert isinstance(chunk, bytes)
            if not chunk:
                break
            for event in parser.feed(chunk):
                if event.event != TRANSFER_RECEIVED:
                    continue
                yield from arrived(json.loads(event.data))
                reading.delivered = True
                reading.position = event.id or reading.position
    except GeneratorExit:
        raise  # the flow is dropped: nothing more may be yielded; the transport's handle goes with it
    except BaseException:
        yield CloseStream(opened.handle)
        raise
    yield CloseStream(opened.handle)


def _report_and_wait(options: ListenOptions, error: Exception, failures: int) -> Generator[Effect, Outcome, int]:
    if options.on_error is not None:
        options.on_error(error)
    failures += 1
    yield Sleep(max(1.0, backoff_seconds(failures + 2)))
    return failures
