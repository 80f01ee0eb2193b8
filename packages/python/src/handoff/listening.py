"""``listen``: each new transfer received once as it arrives, until stopped.

Long-polls the inbox (30 s at a time). The inbox event stream of decisions 8.4 is not served yet;
when it is, it replaces ``_next_page`` as the source of new transfers and nothing else changes.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any

from .errors import HandoffApiError
from .protocol import Effect, Outcome, Sleep, backoff_seconds
from .receiving import ReceiveResult

#: The longest long-poll the API allows (decisions 3.11).
LONG_POLL_SECONDS = 30
#: Credentials that no longer work do not heal by waiting: listen stops on them.
FATAL_STATUSES = (401, 403)

InboxFlow = Callable[[int, "str | None"], Generator[Effect, Outcome, dict[str, Any]]]
ReceiveFlow = Callable[[str], Generator[Effect, Outcome, ReceiveResult]]


@dataclass
class ListenOptions:
    cursor: str | None = None
    on_received: Callable[[ReceiveResult], None] | None = None
    #: A transfer that could not be received: it is skipped, never tried again by this loop.
    on_failed: Callable[[str, Exception], None] | None = None
    #: The inbox could not be read: the loop waits (backing off) and tries again.
    on_error: Callable[[Exception], None] | None = None
    should_stop: Callable[[], bool] = lambda: False


def _next_page(inbox: InboxFlow, cursor: str | None) -> Generator[Effect, Outcome, dict[str, Any]]:
    return (yield from inbox(LONG_POLL_SECONDS, cursor))


def listen_flow(inbox: InboxFlow, receive: ReceiveFlow, options: ListenOptions) -> Generator[Effect, Outcome, None]:
    seen: set[str] = set()
    cursor = options.cursor
    failures = 0
    while not options.should_stop():
        try:
            page = yield from _next_page(inbox, cursor)
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
            identifier = transfer["id"]
            if identifier in seen or transfer.get("status") != "active" or transfer.get("downloads", 0) > 0:
                continue
            seen.add(identifier)
            try:
                result = yield from receive(identifier)
            except Exception as error:
                if options.on_failed is not None:
                    options.on_failed(identifier, error)
                continue
            if options.on_received is not None:
                options.on_received(result)
        cursor = page.get("next_cursor") or cursor


def _report_and_wait(options: ListenOptions, error: Exception, failures: int) -> Generator[Effect, Outcome, int]:
    if options.on_error is not None:
        options.on_error(error)
    failures += 1
    yield Sleep(max(1.0, backoff_seconds(failures + 2)))
    return failures
