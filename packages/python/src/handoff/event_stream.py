"""Reads a text/event-stream body into events, as the HTML standard's EventSource parses it
(section 9.2.6): lines end in CR, LF or CRLF; ``:`` starts a comment (the keep-alive); ``data:``
lines join with LF; an empty line dispatches; an id holds until the stream sets another.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass

_LINE_END = re.compile(r"\r\n|\r|\n")


@dataclass
class ServerSentEvent:
    event: str
    id: str | None
    data: str


class EventStreamParser:
    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")()
        self._buffer = ""
        self._event = ""
        self._data: list[str] = []
        self._id: str | None = None

    def feed(self, chunk: bytes) -> list[ServerSentEvent]:
        """The events the chunk completes, in order."""
        self._buffer += self._decoder.decode(chunk)
        events: list[ServerSentEvent] = []
        while True:
            end = _LINE_END.search(self._buffer)
            # A CR last in the buffer may be the first half of a CRLF still on the way.
            if end is None or (end.group() == "\r" and end.end() == len(self._buffer)):
                return events
            line = self._buffer[: end.start()]
            self._buffer = self._buffer[end.end() :]
            event = self._line(line)
            if event is not None:
                events.append(event)

    def _line(self, line: str) -> ServerSentEvent | None:
        if line == "":
            event = ServerSentEvent(self._event or "message", self._id, "\n".join(self._data)) if self._data else None
            self._event, self._data = "", []
            return event
        if line.startswith(":"):
            return None
        field, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if field == "event":
            self._event = value
        elif field == "data":
            self._data.append(value)
        elif field == "id" and "\0" not in value:
            self._id = value
        return None
