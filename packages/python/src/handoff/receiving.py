"""Receiving (decisions 5.3–5.6, 7.3): verify → download → decrypt → Shield → atomic rename.

The flow both clients run, as a generator of effects. Every refusal of 5.3/5.4 writes nothing:
files go to temporary files in the output folder and are moved to their names only when every
file of the transfer has passed; on any failure everything this call wrote is removed.
"""

from __future__ import annotations

import errno
import hashlib
import os
import secrets
import sys
from collections.abc import Callable, Generator
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any, TypedDict
from urllib.parse import quote

from .custody import post_receipt, receipt_draft, utc_now
from .api_types import ResolvedAgent, Transfer, TransferDownload
from .crypto import RecordDecryptor, SignedTransfer, from_base64, plain_size_of, unwrap_content_key, verify_transfer
from .errors import HandoffApiError, HandoffCryptoError, HandoffError, HandoffTransferError
from .identity import Identity
from .local import MAX_NAME_BYTES, MAX_PATH_BYTES, MAX_SEGMENTS
from .protocol import Effect, Outcome, RequestSpec, Settings, call, request
from .sending import ProgressCallback, Resolver
from .shield import DEFAULT_SHIELD_LEVEL, FileScan, ShieldLevelError, ShieldResult, create_file_scan, parse_shield_level


class ReceivedFile(TypedDict, total=False):
    name: str
    #: The absolute path written; absent when Shield blocked the file.
    path: str
    #: Plaintext bytes received.
    size: int
    shield: ShieldResult


class ReceiveResult(TypedDict):
    transfer_id: str
    files: list[ReceivedFile]


@dataclass
class ReceiveOptions:
    out_dir: str
    shield: str | None = None
    accept_rotation: bool = False
    on_progress: ProgressCallback | None = None
    #: Sign and post a receipt once every file verified (decisions 9.5).
    receipt: bool = True
    #: Told what became of the receipt: ``{position, leaf_index}``, or ``{error}`` (never raised).
    on_receipt: Callable[[dict[str, Any]], None] | None = None
    #: Told the result as soon as the files are in place, before the receipt goes (listen prints it).
    on_placed: Callable[[ReceiveResult], None] | None = None
    #: The receipt's ``received_at`` (the I/O shell's clock).
    now: Callable[[], str] = utc_now


def shield_level(level: str | None) -> str:
    """The level asked for (default ``standard``); unknown is UNKNOWN_SHIELD_LEVEL before any download."""
    try:
        return parse_shield_level(level if level is not None else DEFAULT_SHIELD_LEVEL)
    except ShieldLevelError as error:
        raise HandoffError("UNKNOWN_SHIELD_LEVEL", str(error)) from None


_CONTROL = {chr(c) for c in [*range(0x00, 0x20), *range(0x7F, 0xA0)]}


def safe_relative_name(name: str, transfer_id: str) -> list[str]:
    """A served name as path segments inside the output folder (7.3), never outside it."""
    segments = name.split("/")
    unsafe = (
        len(name.encode("utf-8")) > MAX_PATH_BYTES
        or len(segments) > MAX_SEGMENTS
        or any(
            segment in ("", ".", "..")
            or len(segment.encode("utf-8")) > MAX_NAME_BYTES
            or "\\" in segment
            or any(char in _CONTROL for char in segment)
            or (sys.platform == "win32" and any(char in ':<>"|?*' for char in segment))
            for segment in segments
        )
    )
    if unsafe:
        raise HandoffTransferError(
            "UNSAFE_FILE_NAME",
            f"transfer {transfer_id} names a file {name!r}, which is not a safe relative file name",
            transfer_id,
        )
    return segments


def _check_file_list(transfer: Transfer, download: TransferDownload) -> None:
    """The download must serve the transfer's files, in order, encrypted as it says, each with its IV."""
    listed = [file["name"] for file in transfer["files"]]
    served = [file["file_name"] for file in download["files"]]
    missing_iv = download["is_encrypted"] and any(not file.get("encryption_iv") for file in download["files"])
    if missing_iv or listed != served or download["is_encrypted"] != transfer["is_encrypted"]:
        raise HandoffTransferError(
            "FILE_LIST_MISMATCH",
            f"the files served for transfer {transfer['id']} differ from the files it lists",
            transfer["id"],
        )


def _sender_keys(
    resolve: Resolver, sender: str, download: TransferDownload, accept_rotation: bool
) -> Generator[Effect, Outcome, ResolvedAgent]:
    """The sender's keys, pinned; on a slug several connected accounts use, the one that sent it."""
    try:
        return (yield from resolve(sender, None, accept_rotation))
    except HandoffApiError as error:
        if error.code != "AMBIGUOUS_RECIPIENT":
            raise
        candidates = error.candidates if isinstance(error.candidates, list) else []
        for candidate in candidates:
            keys = yield from resolve(sender, candidate.get("account_id"), accept_rotation)
            if keys.get("public_key") == download.get("sender_public_key"):
                return keys
        raise


def _verify_sender(transfer: Transfer, download: TransferDownload, sender: ResolvedAgent | None) -> None:
    """Decisions 5.4: the signature over the file list, checked before a byte of any file is fetched."""
    transfer_id = transfer["id"]
    signature = download.get("sender_signature")

    def fail(code: str, message: str) -> HandoffTransferError:
        return HandoffTransferError(code, message, transfer_id)

    if sender is None:
        if signature is not None:
            raise fail("SIGNATURE_INVALID", f"transfer {transfer_id} is signed by a sender with no agent keys")
        return
    signing_key = sender.get("signing_public_key")
    if signing_key is None:
        if signature is not None:
            raise fail(
                "SIGNATURE_INVALID",
                f"sender '{transfer['sender']}' has no signing key, yet transfer {transfer_id} is signed",
            )
        return  # a sender without a signing key cannot sign (5.4 signs "with a signing key")
    if signature is None:
        raise fail(
            "SIGNATURE_MISSING",
            f"transfer {transfer_id} is not signed, though its sender '{transfer['sender']}' has a signing key",
        )
    if not isinstance(transfer["sender"], str):
        raise fail("SIGNATURE_INVALID", f"transfer {transfer_id} is signed, yet its sender is no agent")
    signed = SignedTransfer(
        sender=transfer["sender"],
        recipient=transfer["recipient"],
        recipient_key_version=download.get("recipient_key_version") or 0,
        encrypted_key=download.get("encrypted_key") or "",
        files=[(file["file_name"], file.get("encryption_iv") or "") for file in download["files"]],
    )
    if not verify_transfer(from_base64(signing_key), signed, signature):
        raise fail(
            "SIGNATURE_INVALID",
            f"the signature of transfer {transfer_id} does not verify against the signing key of '{transfer['sender']}'",
        )


def _named(error: HandoffCryptoError, transfer_id: str, file_name: str) -> HandoffTransferError:
    return HandoffTransferError(error.code, f"{file_name}: {error.message}", transfer_id)


class FileSink:
    """A download written to a new temporary file: decrypted (each record authenticated) and scanned.

    Each record's plaintext is written as it opens, from the decryptor's buffer: gathering records
    for fewer, larger writes would need a new object or a copy per record, and 1 GiB in 64 KiB
    writes cost the kernel about what it cost in 1 MiB writevs (0.21 s against 0.19 s).
    """

    def __init__(
        self,
        path: str,
        decryptor: RecordDecryptor | None,
        scan: FileScan,
        on_bytes: Callable[[int], None],
    ) -> None:
        self.path = path
        self.size = 0
        self._decryptor = decryptor
        self._scan = scan
        self._on_bytes = on_bytes
        #: The plaintext written and the bytes downloaded, hashed as they pass (a receipt names both).
        self.plain_hash = hashlib.sha256()
        self.stored_hash = hashlib.sha256()
        self._fd: int | None = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)

    def __call__(self, chunk: bytes | memoryview) -> None:
        self.stored_hash.update(chunk)
        if self._decryptor is None:
            self._take(memoryview(chunk))
            return
        for plaintext in self._decryptor.push(chunk):
            self._take(plaintext)

    def finish(self) -> None:
        if self._decryptor is not None:
            last = self._decryptor.end()
            if last:
                self._take(last)
        self.close()

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def _take(self, plaintext: memoryview) -> None:
        """Scans and writes ``plaintext`` before returning: its buffer is reused after."""
        assert self._fd is not None
        self._scan.observe(plaintext)
        self.plain_hash.update(plaintext)
        written = 0
        while written < len(plaintext):  # again from where a short write stopped
            written += os.write(self._fd, plaintext[written:])
        self.size += len(plaintext)
        self._on_bytes(self.size)


def _candidate_name(name: str, attempt: int) -> str:
    """``name``, else ``name (1).ext``, ``name (2).ext``…"""
    if attempt == 0:
        return name
    dot = name.rfind(".")
    if dot <= 0:
        return f"{name} ({attempt})"
    return f"{name[:dot]} ({attempt}){name[dot:]}"


def place_file(temp: str, folder: str, name: str) -> str:
    """Moves a finished temporary file to a free name in ``folder`` without replacing anything."""
    for attempt in range(1000):
        target = os.path.join(folder, _candidate_name(name, attempt))
        try:
            os.link(temp, target)
        except FileExistsError:
            continue
        except OSError as error:
            if error.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP):
                raise
            # No hard links here (some network and FAT file systems): a plain rename is the best left.
            os.rename(temp, target)
            return target
        os.unlink(temp)
        return target
    raise HandoffError("NO_FREE_NAME", f"no free file name for {name} in {folder}")


@dataclass
class _Written:
    """What one receive wrote, so that a failure removes all of it."""

    temps: list[str] = field(default_factory=list)
    placed: list[str] = field(default_factory=list)
    folders: list[str] = field(default_factory=list)

    def make_folders(self, folder: str) -> None:
        missing: list[str] = []
        current = folder
        while not os.path.isdir(current):
            missing.append(current)
            current = os.path.dirname(current)
        os.makedirs(folder, exist_ok=True)
        self.folders.extend(missing)

    def remove(self) -> None:
        for path in [*self.temps, *self.placed]:
            with suppress(FileNotFoundError):
                os.unlink(path)
        for folder in sorted(self.folders, key=len, reverse=True):  # innermost first
            with suppress(OSError):
                os.rmdir(folder)


def receive_flow(
    settings: Settings,
    identity: Identity | None,
    resolve: Resolver,
    transfer_id: str,
    options: ReceiveOptions,
) -> Generator[Effect, Outcome, ReceiveResult]:
    """The one receiving flow; answers ``{transfer_id, files: [{name, path?, size, shield}]}``."""
    level = shield_level(options.shield)
    out_dir = os.path.abspath(options.out_dir)
    quoted = _quote(transfer_id)
    transfer: Transfer = yield from call(RequestSpec("GET", f"/v1/transfers/{quoted}"), settings)
    for listed in transfer["files"]:
        safe_relative_name(listed["name"], transfer["id"])
    if transfer["is_encrypted"] and identity is None:
        raise HandoffError("IDENTITY_REQUIRED", "receiving an encrypted transfer needs the recipient's identity")
    # Counts a download: not retried on a network error, which could count it twice.
    download: TransferDownload = yield from call(
        RequestSpec("GET", f"/v1/transfers/{quoted}/download", idempotent=False), settings
    )
    for served in download["files"]:
        safe_relative_name(served["file_name"], transfer["id"])
    _check_file_list(transfer, download)

    content_key = None
    if download["is_encrypted"]:
        sender = None
        # A person and a request link's sender (decisions 10.3) have no agent keys: nothing is signed.
        sender_slug = transfer["sender"]
        if transfer["mode"] not in ("human-to-agent", "request") and isinstance(sender_slug, str):
            sender = yield from _sender_keys(resolve, sender_slug, download, options.accept_rotation)
        _verify_sender(transfer, download, sender)
        encrypted_key = download["encrypted_key"]
        if not encrypted_key:
            raise HandoffTransferError(
                "FILE_LIST_MISMATCH", f"transfer {transfer['id']} has no encrypted key", transfer["id"]
            )
        assert identity is not None
        try:
            content_key = unwrap_content_key(encrypted_key, identity.x25519.private_key)
        except HandoffCryptoError as error:
            raise _named(error, transfer["id"], "the content key") from None

    written = _Written()
    results: list[ReceivedFile] = []
    hashed: list[dict[str, Any]] = []
    pending: list[tuple[str, ReceivedFile, list[str]]] = []
    try:
        written.make_folders(out_dir)
        for index, served in enumerate(download["files"]):
            name = served["file_name"]
            temp = os.path.join(out_dir, f".handoff-{secrets.token_hex(8)}.part")
            total = plain_size_of(served["size"]) if content_key else served["size"]
            progress = options.on_progress

            def on_bytes(done: int, name: str = name, total: int = total) -> None:
                if progress is not None:
                    progress(name, done, total)

            try:
                # _check_file_list refused an encrypted transfer with a file without its IV.
                iv = served["encryption_iv"] or ""
                decryptor = RecordDecryptor(content_key, iv) if content_key else None
                scan = create_file_scan(level, name, transfer["files"][index].get("type"))
                written.temps.append(temp)
                sink = FileSink(temp, decryptor, scan, on_bytes)
                try:
                    yield from request(RequestSpec("GET", served["download_url"], sink=sink), settings)
                    sink.finish()
                finally:
                    sink.close()
            except HandoffCryptoError as error:
                raise _named(error, transfer["id"], name) from None
            file: ReceivedFile = {"name": name, "size": sink.size, "shield": scan.finish(temp)}
            results.append(file)
            hashed.append(
                {
                    "name": name,
                    "size": sink.size,
                    "sha256": sink.plain_hash.hexdigest(),
                    "stored_sha256": sink.stored_hash.hexdigest(),
                }
            )
            if file["shield"]["verdict"] == "blocked":
                os.unlink(temp)
                written.temps.remove(temp)
            else:
                pending.append((temp, file, safe_relative_name(name, transfer["id"])))
        for temp, file, segments in pending:
            folder = os.path.join(out_dir, *segments[:-1])
            written.make_folders(folder)
            file["path"] = place_file(temp, folder, segments[-1])
            written.temps.remove(temp)
            written.placed.append(file["path"])
    except BaseException:
        written.remove()
        raise
    result: ReceiveResult = {"transfer_id": transfer["id"], "files": [_in_spec_order(file) for file in results]}
    if options.on_placed is not None:
        options.on_placed(result)
    if options.receipt and identity is not None:
        verdicts = [file["shield"]["verdict"] for file in results]
        draft = receipt_draft(transfer, download, level, hashed, verdicts, options.now())
        outcome = yield from post_receipt(settings, identity, draft)
        if options.on_receipt is not None:
            options.on_receipt(outcome)
    return result


def _in_spec_order(file: ReceivedFile) -> ReceivedFile:
    """Each file's fields in the order of decisions 5.6: name, path, size, shield."""
    ordered: ReceivedFile = {"name": file["name"]}
    if "path" in file:
        ordered["path"] = file["path"]
    ordered["size"] = file["size"]
    ordered["shield"] = file["shield"]
    return ordered


def _quote(segment: str) -> str:
    return quote(segment, safe="")
