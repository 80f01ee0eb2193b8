"""transport.perform's decisions, driven by hand with no I/O: what each step's answer or failure
becomes, and that every answer read is closed."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from handoff import HandoffError
from handoff.protocol import Answer, Attempt, NetworkFailure, OpenStream, StreamOpened
from handoff.transport import Close, NextChunk, ReadWhole, Send, Steps, perform


def attempt(sink: Any = None) -> Attempt:
    return Attempt("GET", "http://h/v1/x", {}, {}, None, None, sink)


def steps_of(steps: Steps[Any], answers: list[Any]) -> tuple[list[type], Any]:
    """Runs ``steps``, answering each with the next of ``answers`` (an exception is thrown in)."""
    taken: list[type] = []
    step = next(steps)
    while True:
        taken.append(type(step))
        answer = answers.pop(0) if not isinstance(step, Close) else None
        try:
            step = steps.throw(answer) if isinstance(answer, BaseException) else steps.send(answer)
        except StopIteration as stop:
            return taken, stop.value


def test_a_refused_connection_is_a_network_failure_for_the_retry_rules() -> None:
    taken, outcome = steps_of(perform(attempt(), False), [httpx.ConnectError("refused")])
    assert taken == [Send] and outcome == NetworkFailure("refused")


def test_an_answer_is_read_whole_and_closed_and_a_broken_read_is_a_network_failure() -> None:
    taken, outcome = steps_of(perform(attempt(), False), [httpx.Response(404), b'{"error":{}}'])
    assert taken == [Send, ReadWhole, Close]
    assert isinstance(outcome, Answer) and (outcome.status, outcome.content) == (404, b'{"error":{}}')
    taken, outcome = steps_of(perform(attempt(), False), [httpx.Response(200), httpx.ReadError("reset")])
    assert taken == [Send, ReadWhole, Close] and outcome == NetworkFailure("reset")


def test_a_success_streams_into_the_sink_and_a_break_midway_is_network_error_not_a_retry() -> None:
    received: list[bytes] = []
    taken, outcome = steps_of(perform(attempt(received.append), False), [httpx.Response(200), b"ab", b"c", b""])
    assert taken == [Send, NextChunk, NextChunk, NextChunk, Close] and b"".join(received) == b"abc"
    assert isinstance(outcome, Answer) and outcome.content == b""
    with pytest.raises(HandoffError) as failed:
        steps_of(perform(attempt(received.append), False), [httpx.Response(200), b"ab", httpx.ReadError("reset")])
    assert failed.value.code == "NETWORK_ERROR" and "GET /v1/x failed: reset" in str(failed.value)


def test_an_opened_event_stream_stays_open_and_a_refusal_is_read_and_closed() -> None:
    taken, outcome = steps_of(perform(OpenStream(attempt()), False), [httpx.Response(200)])
    assert taken == [Send] and isinstance(outcome, StreamOpened)
    taken, outcome = steps_of(perform(OpenStream(attempt()), False), [httpx.Response(404), b"no"])
    assert taken == [Send, ReadWhole, Close] and isinstance(outcome, Answer)
