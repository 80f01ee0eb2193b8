"""Answering a request link (decisions 10.2, 10.5), as the Node SDK's sendToRequest: the flow both
clients run, as a generator of effects.

Read the link with its token alone, check the agent's key against the transparency log (9.6)
before a byte is read, wrap a fresh content key to it, declare the files with their encrypted
sizes and salts, stream each through HOE1 encryption to its upload link (tus from 8 MiB), confirm.
Every request goes to the link's own service as an absolute URL, so no API key goes with it.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlparse

from .api_types import ConfirmedRequestTransfer, PublicRequest, RequestTransfer
from .crypto import SALT_SIZE, from_base64, new_content_key, wrap_content_key
from .custody import LogWitness, check_answer
from .errors import HandoffError
from .local import LocalFile
from .protocol import Effect, Outcome, RequestSpec, Settings, Sleep, call
from .sending import ProgressCallback, declared_files, links_in_order, outgoing, upload_presigned_file

#: A new key's leaf reaches a checkpoint within about a second (decisions 9.2); each read of the
#: link counts against its 10 a minute, so it is read again only a few times.
KEY_PROOF_ATTEMPTS = 4
KEY_PROOF_RETRY_SECONDS = 0.5
_LINK_PATH = re.compile(r"^(.*)/r/(hrq_[A-Za-z0-9_-]{32})/?$")


@dataclass
class RequestSendOptions:
    #: The link's page, ``{base}/r/hrq_…``, as its owner handed it out.
    link: str
    paths: list[str]
    #: What the sender types: shown to the agent as unverified.
    sender_name: str | None = None
    sender_email: str | None = None
    on_progress: ProgressCallback | None = None


def parse_request_link(link: str) -> tuple[str, str]:
    """The service a request link belongs to and its token, from the link's page URL (10.1)."""
    parsed = urlparse(link)
    match = _LINK_PATH.match(parsed.path)
    if parsed.scheme not in ("http", "https") or not parsed.netloc or not match:
        raise HandoffError("INVALID_REQUEST_LINK", f"not a request link (…/r/hrq_…): {link!r}")
    return f"{parsed.scheme}://{parsed.netloc}{match.group(1)}", match.group(2)


def _read_link(settings: Settings, at: str) -> Generator[Effect, Outcome, PublicRequest]:
    """The link's answer, read again for a moment while the log has not yet signed the agent's key."""
    attempt = 1
    while True:
        request: PublicRequest = yield from call(RequestSpec("GET", at), settings)
        if request["agent"].get("key_proof") is not None or attempt >= KEY_PROOF_ATTEMPTS:
            return request
        attempt += 1
        yield Sleep(KEY_PROOF_RETRY_SECONDS)


def send_to_request_flow(
    settings: Settings,
    witness_of: Callable[[str], LogWitness],
    options: RequestSendOptions,
    local: Callable[[], list[LocalFile]],
) -> Generator[Effect, Outcome, ConfirmedRequestTransfer]:
    """Answers the link with the files ``local`` finds, once ``witness_of(service)`` shows the log
    backs the agent's key (HandoffCustodyError otherwise, nothing read or sent); answers
    ``{transfer_id, status}``."""
    base_url, token = parse_request_link(options.link)
    at = f"{base_url}/v1/requests/by-token/{token}"
    request = yield from _read_link(settings, at)
    agent = request["agent"]
    yield from check_answer(witness_of(base_url), agent)
    files = local()
    if not files:
        raise HandoffError("NO_FILES", "the paths given hold no regular file to send")
    content_key = new_content_key()
    encrypted_key = wrap_content_key(content_key, from_base64(agent["public_key"]))
    out = [
        outgoing(file, (content_key, secrets.token_bytes(SALT_SIZE)), options.on_progress) for file in files
    ]
    body: dict[str, Any] = {
        "files": declared_files(out),
        "encrypted_key": encrypted_key,
        "recipient_key_version": agent["key_version"],
    }
    if options.sender_name:
        body["sender_name"] = options.sender_name
    if options.sender_email:
        body["sender_email"] = options.sender_email
    created: RequestTransfer = yield from call(RequestSpec("POST", f"{at}/transfers", json=body), settings)
    for file, link in zip(out, links_in_order(created["upload_urls"], out)):
        yield from upload_presigned_file(settings, link, file)
    transfer = quote(created["transfer_id"], safe="")
    confirmed: ConfirmedRequestTransfer = yield from call(
        RequestSpec("POST", f"{at}/transfers/{transfer}/confirm"), settings
    )
    return confirmed
