"""Sending (decisions 5.2–5.4, 7.3): the flow both clients run, as a generator of effects.

Resolve and pin the recipient, wrap a fresh content key to it, pick each file's salt and sign the
file list, all before the first byte leaves; then stream each file from disk through the record
encryption into one multipart POST (small transfers) or presigned uploads (from 8 MiB on the
wire): each file of 8 MiB or more through its tus ``resumable_url``, resumed from the server's
offset when the connection drops (decisions 7.2), the others with one PUT.
"""

from __future__ import annotations

import math
import re
import secrets
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import quote

from .api_types import PresignedTransfer, PresignedUploadLink, ResolvedAgent, Transfer
from .crypto import (
    ENCRYPTION_ALGORITHM,
    HEADER_SIZE,
    RECORD_SIZE,
    SALT_SIZE,
    TAG_SIZE,
    RecordEncryptor,
    SignedTransfer,
    encrypted_size,
    from_base64,
    new_content_key,
    sign_transfer,
    to_base64,
    wrap_content_key,
)
from .errors import HandoffApiError, HandoffError
from .identity import Identity
from .local import FileState, LocalFile, media_type_of
from .protocol import Effect, Outcome, RequestSpec, Settings, Sleep, backoff_seconds, call, request

#: At or above this many bytes on the wire a transfer goes presigned, below it one multipart POST.
PRESIGNED_THRESHOLD = 8 * 1024 * 1024
#: Files from this many bytes on the wire go through their ``resumable_url`` (decisions 7.2).
RESUMABLE_FROM = 8 * 1024 * 1024
#: Attempts in a row that move the server's offset nowhere before an upload gives up (7.2).
MAX_STALLED_ATTEMPTS = 5
_TUS = {"tus-resumable": "1.0.0"}
#: Bytes read from a file at a time: 16 records of 5.3, as the Node SDK reads.
FILE_CHUNK_BYTES = 1024 * 1024
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")

#: Progress of one file: (name, plaintext bytes so far, plaintext size).
ProgressCallback = Callable[[str, int, int], None]
#: Resolves and pins an agent: (agent, account, accept_rotation) → the resolve answer.
Resolver = Callable[[str, "str | None", bool], Generator[Effect, Outcome, ResolvedAgent]]


@dataclass
class SendOptions:
    to: str
    paths: list[str]
    account: str | None = None
    message: str | None = None
    max_downloads: int | None = None
    expires_in: str | None = None
    auto_delete: bool | None = None
    plain: bool = False
    accept_rotation: bool = False
    on_progress: ProgressCallback | None = None
    #: Told, once a presigned transfer is declared and before its first byte, what finishing it
    #: after a crash takes (decisions 7.2): the same JSON as the Node SDK's SendState.
    on_started: Callable[[dict[str, Any]], None] | None = None


@dataclass
class Sealing:
    """The encryption of one transfer (5.2, 5.4), fixed before the first byte leaves."""

    content_key: bytes
    encrypted_key: str
    recipient_key_version: int
    signature: str
    salts: list[bytes]


def seal(
    identity: Identity, recipient: str, resolved: ResolvedAgent, files: list[LocalFile]
) -> Sealing:
    public_key, version = resolved["public_key"], resolved["key_version"]
    # The resolver refuses an agent without keys (AGENT_NOT_CONNECTED), so both are set here.
    assert public_key is not None and version is not None
    content_key = new_content_key()
    encrypted_key = wrap_content_key(content_key, from_base64(public_key))
    salts = [secrets.token_bytes(SALT_SIZE) for _ in files]
    signature = sign_transfer(
        identity.ed25519.private_key,
        SignedTransfer(
            sender=identity.agent_id,
            recipient=recipient,
            recipient_key_version=version,
            encrypted_key=encrypted_key,
            files=[(file.name, to_base64(salt)) for file, salt in zip(files, salts)],
        ),
    )
    return Sealing(content_key, encrypted_key, version, signature, salts)


def read_file_chunks(path: str, size: int, on_bytes: Callable[[int], None], start: int = 0) -> Iterator[bytes]:
    """The file from byte ``start`` in chunks of FILE_CHUNK_BYTES; a file whose size changes fails
    with FILE_CHANGED."""

    def changed() -> HandoffError:
        return HandoffError(
            "FILE_CHANGED", f"{path} changed size while it was being sent ({size} bytes when it started)"
        )

    with open(path, "rb", buffering=0) as file:
        file.seek(start)
        position = start
        while position < size:
            chunk = file.read(min(FILE_CHUNK_BYTES, size - position))
            if not chunk:
                raise changed()
            position += len(chunk)
            on_bytes(position)
            yield chunk
        if file.read(1):
            raise changed()


def encrypted_file_chunks(
    path: str, size: int, content_key: bytes, salt: bytes, on_bytes: Callable[[int], None], offset: int = 0
) -> Iterator[bytes]:
    """The file encrypted as 5.3 while it is read: one joined piece per read, header first.

    From wire byte ``offset`` on (a resumed upload, 7.2): sealed again from the record holding
    the offset, that record's bytes before it left out.
    """
    record = max(0, (offset - HEADER_SIZE) // (RECORD_SIZE + TAG_SIZE))
    # Record 0's bytes start with the header, later ones at their own record.
    skip = offset - (0 if record == 0 else HEADER_SIZE + record * (RECORD_SIZE + TAG_SIZE))
    encryptor = RecordEncryptor(content_key, salt, first_record=record)

    def joined(pieces: list[bytes]) -> bytes:
        """The pieces as one, without what is still to be skipped."""
        nonlocal skip
        whole = b"".join(pieces)
        kept, skip = whole[skip:], max(0, skip - len(whole))
        return kept

    pieces = [encryptor.header] if record == 0 else []
    for chunk in read_file_chunks(path, size, on_bytes, record * RECORD_SIZE):
        pieces.extend(encryptor.push(chunk))
        piece, pieces = joined(pieces), []
        if piece:
            yield piece
    yield joined([*pieces, encryptor.finish()])


@dataclass
class Outgoing:
    """One file as it goes out: opened afresh for each attempt, identical bytes each time."""

    name: str
    type: str
    wire_size: int
    encryption_iv: str | None
    #: The wire bytes from an offset (a resumed upload) to the end.
    open_from: Callable[[int], Iterator[bytes]]

    def open(self) -> Iterator[bytes]:
        return self.open_from(0)


#: A file's encryption (5.3): the transfer's content key and the file's own salt.
FileSealing = tuple[bytes, bytes]


def file_sealing(sealing: Sealing | None, index: int) -> FileSealing | None:
    return (sealing.content_key, sealing.salts[index]) if sealing else None


def outgoing(file: LocalFile, sealing: FileSealing | None, progress: ProgressCallback | None) -> Outgoing:
    def on_bytes(done: int) -> None:
        if progress is not None:
            progress(file.name, done, file.size)

    def open_from(offset: int) -> Iterator[bytes]:
        if sealing is None:
            return read_file_chunks(file.path, file.size, on_bytes, offset)
        # The same key and salt give the same bytes: a retried upload matches the signed list.
        return encrypted_file_chunks(file.path, file.size, *sealing, on_bytes, offset)

    return Outgoing(
        name=file.name,
        type=file.type,
        wire_size=encrypted_size(file.size) if sealing else file.size,
        encryption_iv=to_base64(sealing[1]) if sealing else None,
        open_from=open_from,
    )


def transfer_fields(identity: Identity, options: SendOptions, mode: str, sealing: Sealing | None) -> dict[str, Any]:
    """The fields both upload paths share, in the API's names and Node's order; None is left out."""
    fields: dict[str, Any] = {
        "mode": mode,
        "sender": identity.agent_id,
        "recipient": options.to,
        "recipient_account": options.account,
        "is_encrypted": sealing is not None,
        "message": options.message,
        "max_downloads": options.max_downloads,
        "expires_in": options.expires_in,
        "auto_delete": options.auto_delete,
        "encrypted_key": sealing.encrypted_key if sealing else None,
        "encryption_algorithm": ENCRYPTION_ALGORITHM if sealing else None,
        "sender_signature": sealing.signature if sealing else None,
        "recipient_key_version": sealing.recipient_key_version if sealing else None,
    }
    return {name: value for name, value in fields.items() if value is not None}


def _form_value(value: Any) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def _filename_parameter(name: str) -> str:
    """Plain ASCII as a quoted string, anything else in RFC 5987 form (as the Node SDK writes)."""
    if re.fullmatch(r"[\x20-\x7e]*", name) and not re.search(r'["\\]', name):
        return f'filename="{name}"'
    return "filename*=UTF-8''" + quote(name, safe="!~.-_")


@dataclass
class MultipartBody:
    content_type: str
    length: int
    open: Callable[[], Iterator[bytes]]


def multipart_body(fields: list[tuple[str, str]], files: list[Outgoing]) -> MultipartBody:
    """multipart/form-data as a stream: text fields first, then one ``files`` part per file."""
    boundary = f"----handoff-{secrets.token_hex(12)}"
    field_bytes = b"".join(
        f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode()
        for name, value in fields
    )
    heads = [
        (
            f'--{boundary}\r\nContent-Disposition: form-data; name="files"; {_filename_parameter(file.name)}\r\n'
            f"Content-Type: {file.type}\r\n\r\n"
        ).encode()
        for file in files
    ]
    closing = f"--{boundary}--\r\n".encode()
    length = len(field_bytes) + sum(len(h) + f.wire_size + 2 for h, f in zip(heads, files)) + len(closing)

    def body() -> Iterator[bytes]:
        yield field_bytes
        for head, file in zip(heads, files):
            yield head
            yield from file.open()
            yield b"\r\n"
        yield closing

    return MultipartBody(f"multipart/form-data; boundary={boundary}", length, body)


def _send_multipart(
    settings: Settings, fields: dict[str, Any], files: list[Outgoing]
) -> Generator[Effect, Outcome, Transfer]:
    form = [(name, _form_value(value)) for name, value in fields.items()]
    form.extend(("encryption_iv", file.encryption_iv) for file in files if file.encryption_iv)
    body = multipart_body(form, files)
    headers = {"content-type": body.content_type, "content-length": str(body.length)}
    transfer: Transfer = yield from call(
        RequestSpec("POST", "/v1/transfers", body=body.open, headers=headers), settings
    )
    return transfer


def _offset_of(headers: Any, url: str) -> int:
    value = str(headers.get("upload-offset", ""))
    if not value.isdigit():
        raise HandoffError("UNEXPECTED_ANSWER", f"{url.split('/v1/', 1)[0]} answered no Upload-Offset")
    return int(value)


def _transient(error: HandoffError) -> bool:
    """Failures after which the upload may go on from the server's offset: the network, a 5xx,
    409 (the server's offset is not ours), 423 (an old request still holds the upload), 429."""
    if isinstance(error, HandoffApiError):
        return error.status >= 500 or error.status in (409, 423, 429)
    return error.code == "NETWORK_ERROR"


def _server_offset(settings: Settings, url: str) -> Generator[Effect, Outcome, int]:
    answer = yield from request(RequestSpec("HEAD", url, headers=_TUS, idempotent=False), settings)
    return _offset_of(answer.headers, url)


def _patch_from(settings: Settings, url: str, file: Outgoing, offset: int) -> Generator[Effect, Outcome, int]:
    """One PATCH of the rest of the file from ``offset``; answers the server's new offset."""
    headers = {
        **_TUS,
        "content-type": "application/offset+octet-stream",
        "upload-offset": str(offset),
        "content-length": str(file.wire_size - offset),
    }
    spec = RequestSpec("PATCH", url, body=lambda: file.open_from(offset), headers=headers, idempotent=False)
    answer = yield from request(spec, settings)
    reached = _offset_of(answer.headers, url)
    if not offset < reached <= file.wire_size:
        raise HandoffError("UNEXPECTED_ANSWER", f"the upload's offset went from {offset} to {reached}")
    return reached


def upload_resumable(
    settings: Settings, url: str, file: Outgoing, known_offset: int | None = 0
) -> Generator[Effect, Outcome, None]:
    """A file through its tus upload resource (decisions 7.1, 7.2), as the Node SDK sends it.

    The rest of the file goes in one PATCH from the server's offset; when that fails on the way
    (a dropped connection, a 5xx), the server keeps what it acknowledged, so after a back-off the
    upload asks where it is (HEAD) and goes on from there, never from zero. It gives up after
    MAX_STALLED_ATTEMPTS attempts in a row that moved the offset nowhere, and at once on an
    answer no retry changes (expired, closed, too large).
    """
    best, stalled, known = -1, 0, known_offset
    while True:
        try:
            offset = known if known is not None else (yield from _server_offset(settings, url))
            known = None
            if offset > best:
                best, stalled = offset, 0
            if offset >= file.wire_size:
                return
            known = yield from _patch_from(settings, url, file, offset)
            if known >= file.wire_size:
                return
        except HandoffError as error:
            if not _transient(error):
                raise
            stalled += 1
            if stalled >= MAX_STALLED_ATTEMPTS:
                raise HandoffError(
                    error.code,
                    f"{error}; the upload made no progress in {MAX_STALLED_ATTEMPTS} attempts in a row "
                    f"(the server holds {max(0, best)} of {file.wire_size} bytes)",
                ) from error
            yield Sleep(backoff_seconds(stalled - 1))


def upload_presigned_file(
    settings: Settings, link: PresignedUploadLink, file: Outgoing
) -> Generator[Effect, Outcome, None]:
    """One file to its upload link: from RESUMABLE_FROM bytes through its resumable_url (7.2)."""
    if file.wire_size >= RESUMABLE_FROM and link.get("resumable_url"):
        yield from upload_resumable(settings, link["resumable_url"], file)
        return
    headers = {**link.get("headers", {}), "content-length": str(file.wire_size)}
    yield from request(RequestSpec(link["method"], link["upload_url"], body=file.open, headers=headers), settings)


def _send_state(created: PresignedTransfer, files: list[LocalFile], sealing: Sealing | None) -> dict[str, Any]:
    """What finishing the send takes (decisions 7.2), in the Node SDK's SendState shape."""
    links = created["upload_urls"]
    return {
        "transfer_id": created["id"],
        "expires_at": created["expires_at"],
        "content_key": to_base64(sealing.content_key) if sealing else None,
        "files": [
            {
                "path": file.path,
                "name": file.name,
                "size": file.size,
                "modified_ms": file.modified_ms,
                "resumable_url": link["resumable_url"],
                "encryption_iv": to_base64(sealing.salts[index]) if sealing else None,
            }
            for index, (file, link) in enumerate(zip(files, links))
        ],
    }


def _confirm(settings: Settings, transfer_id: str) -> Generator[Effect, Outcome, Transfer]:
    # The API's own confirm path on our base URL: the API key goes to no other host.
    transfer: Transfer = yield from call(RequestSpec("POST", f"/v1/transfers/{transfer_id}/confirm"), settings)
    return transfer


def _send_presigned(
    settings: Settings,
    fields: dict[str, Any],
    files: list[Outgoing],
    on_created: Callable[[PresignedTransfer], None],
) -> Generator[Effect, Outcome, Transfer]:
    created: PresignedTransfer = yield from call(
        RequestSpec("POST", "/v1/transfers/presigned", json={**fields, "files": declared_files(files)}), settings
    )
    links = links_in_order(created.get("upload_urls") or [], files)
    on_created(created)
    for file, link in zip(files, links):
        yield from upload_presigned_file(settings, link, file)
    return (yield from _confirm(settings, created["id"]))


def declared_files(files: list[Outgoing]) -> list[dict[str, Any]]:
    """The files as a presigned create declares them: their sizes on the wire, each with its salt."""
    return [
        {
            "name": file.name,
            "size": file.wire_size,
            "content_type": file.type,
            **({"encryption_iv": file.encryption_iv} if file.encryption_iv else {}),
        }
        for file in files
    ]


def links_in_order(links: list[PresignedUploadLink], files: list[Outgoing]) -> list[PresignedUploadLink]:
    """The upload links, one a file in the order declared; UNEXPECTED_ANSWER when one is missing."""
    for index, file in enumerate(files):
        link = links[index] if index < len(links) else None
        if link is None or link.get("file_name") != file.name:
            raise HandoffError("UNEXPECTED_ANSWER", f"the server gave no upload link for {file.name}")
    return links


def _unchanged_file(entry: dict[str, Any], now: FileState | None) -> LocalFile:
    """The file of a send being resumed, as long as it is the one the send began with."""
    # Node and Python round a modification time differently in its last bits: within 1 ms is the same.
    if (
        now is None
        or not now.regular
        or now.size != entry["size"]
        or not math.isclose(now.modified_ms, entry["modified_ms"], abs_tol=1.0)
    ):
        raise HandoffError(
            "FILE_CHANGED",
            f"{entry['path']} changed since the send began: the bytes already sent would no longer match it",
        )
    return LocalFile(entry["path"], entry["name"], media_type_of(entry["name"]), now.size, now.modified_ms)


def resume_send_flow(
    settings: Settings,
    state: dict[str, Any],
    found: list[FileState | None],
    now: datetime,
    on_progress: ProgressCallback | None = None,
) -> Generator[Effect, Outcome, Transfer]:
    """Finishes a presigned send that was interrupted (decisions 7.2), as the Node SDK's resumeSend:
    each file from the server's offset (HEAD), the encrypted ones sealed again from the record
    holding it with the same K and salt, then confirm. Refuses a transfer no longer pending and a
    file that changed since the send began: ``found`` is each of the state's files as it is now
    (None: gone), ``now`` the time the resume began."""
    transfer_id = state["transfer_id"]
    transfer = yield from call(RequestSpec("GET", f"/v1/transfers/{transfer_id}"), settings)
    status = transfer.get("status")
    if status not in ("pending", "expired"):
        raise HandoffError(
            "ALREADY_CONFIRMED",
            f"transfer {transfer_id} was already confirmed (status {status}): nothing is left to send",
        )
    expires_at = datetime.fromisoformat(state["expires_at"].replace("Z", "+00:00"))
    if status == "expired" or expires_at <= now:
        raise HandoffError(
            "TRANSFER_EXPIRED",
            f"the upload links of transfer {transfer_id} expired ({state['expires_at']}) before its files "
            "were all sent: send them again",
        )
    content_key = from_base64(state["content_key"]) if state.get("content_key") else None
    for entry, current in zip(state["files"], found, strict=True):
        local = _unchanged_file(entry, current)
        iv = entry.get("encryption_iv")
        out = outgoing(local, (content_key, from_base64(iv)) if content_key and iv else None, on_progress)
        yield from upload_resumable(settings, entry["resumable_url"], out, known_offset=None)
    return (yield from _confirm(settings, transfer_id))


def send_flow(
    settings: Settings,
    identity: Identity,
    resolve: Resolver,
    options: SendOptions,
    files: list[LocalFile],
    presigned_threshold: int = PRESIGNED_THRESHOLD,
) -> Generator[Effect, Outcome, Transfer]:
    """Sends ``files`` (what ``local.local_files`` found for ``options.paths``); answers the
    transfer as the API returns it."""
    if not options.paths:
        raise HandoffError("NO_FILES", "send needs at least one file")
    mode = "agent-to-human" if _EMAIL.match(options.to) else "agent-to-agent"
    if not files:
        raise HandoffError("NO_FILES", "the folders given hold no regular file to send")
    sealing = None
    if mode == "agent-to-agent" and not options.plain:
        resolved = yield from resolve(options.to, options.account, options.accept_rotation)
        sealing = seal(identity, options.to, resolved, files)
    out = [outgoing(file, file_sealing(sealing, index), options.on_progress) for index, file in enumerate(files)]
    fields = transfer_fields(identity, options, mode, sealing)
    # Presigned transfers cannot go to people: the server must see those bytes to encrypt them at rest.
    if mode == "agent-to-agent" and sum(file.wire_size for file in out) >= presigned_threshold:
        def on_created(created: PresignedTransfer) -> None:
            if options.on_started is not None:
                options.on_started(_send_state(created, files, sealing))

        return (yield from _send_presigned(settings, fields, out, on_created))
    return (yield from _send_multipart(settings, fields, out))
