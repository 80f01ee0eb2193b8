"""Downloads of signed links through the standard library's http.client.

A download is the one request whose body is large; httpx (httpcore and h11) costs about ten times
the CPU per byte of http.client's buffered socket reads (0.6 s against 0.05 s for 256 MiB on the
development machine), which made the receive of a large file slower than the Node client's. The
signed link is its own credential, needs no cookie, redirect or authentication handling, and the
answer is a plain body: http.client does all of it. Used by the synchronous client unless it was
given its own httpx client or a proxy applies to the link (then httpx carries it, as every other
request).
"""

from __future__ import annotations

import http.client
import ssl
import urllib.request
from collections.abc import Mapping
from urllib.parse import urlencode, urlsplit

from .errors import HandoffError
from .protocol import Answer, Attempt, NetworkFailure, Outcome

#: Bytes read from the socket into the one buffer of a download, then given to the sink.
READ_BYTES = 256 * 1024


def proxied(url: str) -> bool:
    scheme = urlsplit(url).scheme
    host = urlsplit(url).hostname or ""
    return scheme in urllib.request.getproxies() and not urllib.request.proxy_bypass(host)


def _connection(url: str, timeout: float) -> http.client.HTTPConnection:
    parts = urlsplit(url)
    if parts.scheme == "https":
        return http.client.HTTPSConnection(
            parts.hostname or "", parts.port, timeout=timeout, context=ssl.create_default_context()
        )
    return http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=timeout)


def download(attempt: Attempt, timeout: float) -> Outcome:
    """Performs a GET whose successful body goes to the attempt's sink, chunk by chunk."""
    assert attempt.sink is not None
    parts = urlsplit(attempt.url)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    if attempt.query:
        target += ("&" if parts.query else "?") + urlencode(attempt.query)
    connection = _connection(attempt.url, timeout)
    try:
        try:
            connection.request("GET", target, headers=dict(attempt.headers))
            response = connection.getresponse()
        except (OSError, http.client.HTTPException) as error:
            return NetworkFailure(str(error) or type(error).__name__)
        headers: Mapping[str, str] = {name.lower(): value for name, value in response.getheaders()}
        if not 200 <= response.status < 300:
            try:
                return Answer(response.status, headers, response.read())
            except (OSError, http.client.HTTPException) as error:
                return NetworkFailure(str(error) or type(error).__name__)
        # One buffer for the whole body: a new bytes object per read is freed a moment later, and
        # glibc's giving such memory back to the kernel and taking it again costs a page fault per
        # 4 KiB (see RecordDecryptor). The sink is done with each view when it returns.
        buffer = memoryview(bytearray(READ_BYTES))
        try:
            while size := response.readinto(buffer):
                attempt.sink(buffer[:size])
            if response.length:  # the connection ended before Content-Length bytes
                raise http.client.IncompleteRead(b"", response.length)
        except (OSError, http.client.HTTPException) as error:
            raise HandoffError(
                "NETWORK_ERROR", f"GET {parts.path} failed: {str(error) or type(error).__name__}"
            ) from None
        return Answer(response.status, headers, b"")
    finally:
        connection.close()
