"""Custody on the Python client's side (decisions 9.5-9.7), beyond the pure checks of
test_transparency.py: canonical JSON against the Node core itself, then key proofs, receipts and
log verify against the real server (through a key-swapping proxy too), and log witness against a
log that forks."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import ROOT, Server, new_slug, run_node, run_python

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from handoff.crypto import ed25519_public_key_of, generate_ed25519_key_pair
from handoff.transparency import canonical_json, ed25519_valid, leaf_hash, node_hash, note_key_id

# --- A reference tree (RFC 6962 2.1: MTH and PROOF as written there), for the fake log -----------


def _split(n: int) -> int:
    k = 1
    while k * 2 < n:
        k *= 2
    return k


def mth(leaves: list[bytes]) -> bytes:
    if not leaves:
        return hashlib.sha256(b"").digest()
    if len(leaves) == 1:
        return leaf_hash(leaves[0])
    k = _split(len(leaves))
    return node_hash(mth(leaves[:k]), mth(leaves[k:]))


def proof(m: int, leaves: list[bytes], whole: bool = True) -> list[bytes]:
    n = len(leaves)
    if m == n:
        return [] if whole else [mth(leaves)]
    k = _split(n)
    if m <= k:
        return [*proof(m, leaves[:k], whole), mth(leaves[k:])]
    return [*proof(m - k, leaves[k:], False), mth(leaves[:k])]


def test_canonical_json_is_byte_for_byte_the_node_cores() -> None:
    sample: Any = {
        "b": [0.1, 1e21, 1e-7, 1.5e300, 5e-324, 123456789012, -0.0, 2.5, 100.0, 1e-6],
        "a": {"é": "x\u2028\n\u0001\"\\", "\U0001f600": True, "\u00e9a": None, "Z": []},
        "": "",
    }
    script = (
        "const { canonicalJson } = await import('@handoff/sdk/transparency');"
        "process.stdout.write(canonicalJson(JSON.parse(process.argv[1])));"
    )
    node = subprocess.run(
        ["node", "--conditions=source", "--import", "tsx", "--input-type=module", "-e", script, json.dumps(sample)],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=True,
    )
    assert canonical_json(sample).decode("utf-8") == node.stdout


# --- Against the real server ---------------------------------------------------------------------


def _identity(env: dict[str, str], folder: Path, prefix: str) -> tuple[Path, str]:
    slug = new_slug(prefix)
    path = folder / f"{slug}.json"
    made = run_python(["identity", "new", "--agent", slug, "--out", str(path)], env)
    assert made.status == 0, made.stderr
    return path, slug


def _get(env: dict[str, str], url: str) -> Any:
    answer = httpx.get(f"{env['HANDOFF_URL']}{url}", headers={"authorization": f"Bearer {env['HANDOFF_API_KEY']}"}, timeout=60)
    answer.raise_for_status()
    return answer.json() if answer.headers.get("content-type", "").startswith("application/json") else answer.text


class KeySwappingProxy:
    """In front of the real server: passes everything, but while ``swap`` is set gives another
    public key in resolve's answers and request links' (what a compromised operator would do to
    read what is sent)."""

    def __init__(self, upstream: str) -> None:
        self.swap = False
        self.seen: list[str] = []
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_: Any) -> None:
                pass

            def _forward(self) -> None:
                proxy.seen.append(f"{self.command} {self.path}")
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else None
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "accept-encoding", "content-length")}
                answer = httpx.request(self.command, f"{upstream}{self.path}", headers=headers, content=body, timeout=60)
                content = answer.content
                if proxy.swap and answer.status_code == 200:
                    content = _swapped(self.path, answer.json()) or content
                self.send_response(answer.status_code)
                for name, value in answer.headers.items():
                    if name.lower() not in ("content-length", "transfer-encoding", "content-encoding", "connection"):
                        self.send_header(name, value)
                self.send_header("content-length", str(len(content)))
                self.end_headers()
                self.wfile.write(content)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _forward

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _swapped(path: str, data: Any) -> bytes | None:
    """A resolve answer, or a request link's, with another public key; None for anything else."""
    other = base64.b64encode(os.urandom(32)).decode()
    if path.startswith("/v1/agents/resolve"):
        data["public_key"] = other
    elif re.fullmatch(r"/v1/requests/by-token/[^/?]+", path):
        data["agent"]["public_key"] = other
    else:
        return None
    return json.dumps(data).encode()


@pytest.fixture()
def env(server: Server) -> dict[str, str]:
    return server.new_account()


def test_send_refuses_a_key_the_log_does_not_back_before_anything_is_uploaded(env: dict[str, str], tmp_path: Path) -> None:
    sender, _ = _identity(env, tmp_path, "kt-sender")
    _, recipient = _identity(env, tmp_path, "kt-recipient")
    secret = tmp_path / "secret.txt"
    secret.write_text("for the recipient only")
    proxy = KeySwappingProxy(env["HANDOFF_URL"])
    try:
        proxy.swap = True
        refused = run_python(["send", "--identity", str(sender), "--to", recipient, str(secret)], {**env, "HANDOFF_URL": proxy.url})
    finally:
        proxy.close()
    assert refused.status == 5
    assert refused.stdout == ""
    assert f"agent '{recipient}'" in refused.stderr and "(KEY_NOT_IN_LOG)" in refused.stderr
    assert not [line for line in proxy.seen if not line.startswith("GET ")]
    assert _get(env, "/v1/transfers?direction=sent")["transfers"] == []
    # The log view beside the identity, in the Node SDK's format: the pinned key, no checkpoint taken from the lie.
    view = json.loads(Path(str(sender).replace(".json", ".log.json")).read_text())
    assert set(view) == {"vkey", "checkpoint"}
    assert (os.stat(str(sender).replace(".json", ".log.json")).st_mode & 0o777) == 0o600


def test_receive_posts_a_signed_receipt_and_log_verify_checks_the_export_like_node(env: dict[str, str], tmp_path: Path) -> None:
    sender, _ = _identity(env, tmp_path, "r-sender")
    receiver, receiver_slug = _identity(env, tmp_path, "r-receiver")
    content = os.urandom(70_000)
    (tmp_path / "numbers.bin").write_bytes(content)
    sent = run_python(["send", "--identity", str(sender), "--to", receiver_slug, str(tmp_path / "numbers.bin")], env)
    assert sent.status == 0, sent.stderr
    transfer = sent.json()
    got = run_python(["receive", transfer["id"], "--identity", str(receiver), "--out", str(tmp_path / "in")], env)
    assert got.status == 0, got.stderr
    assert got.stderr == ""

    receipts = _get(env, f"/v1/transfers/{transfer['id']}/receipts")["receipts"]
    assert len(receipts) == 1
    receipt = receipts[0]["receipt"]
    me = json.loads(receiver.read_text())
    assert receipt["files"] == [
        {
            "name": "numbers.bin",
            "size": len(content),
            "sha256": hashlib.sha256(content).hexdigest(),
            "stored_sha256": receipt["files"][0]["stored_sha256"],
        }
    ]
    assert receipt["files"][0]["stored_sha256"] != hashlib.sha256(content).hexdigest()
    assert receipt["shield"] == {"level": "standard", "verdict": "clean"}
    signed = canonical_json(receipt)
    assert ed25519_valid(base64.b64decode(me["ed25519_public_key"]), base64.b64decode(receipts[0]["signature"]), signed)

    quiet = run_python(["send", "--identity", str(sender), "--to", receiver_slug, str(tmp_path / "numbers.bin")], env).json()
    skipped = run_python(["receive", quiet["id"], "--identity", str(receiver), "--out", str(tmp_path / "in2"), "--no-receipt"], env)
    assert skipped.status == 0, skipped.stderr
    assert _get(env, f"/v1/transfers/{quiet['id']}/receipts")["receipts"] == []

    # The account's export, once a checkpoint covers the receipt (within about a second).
    deadline = time.monotonic() + 20
    exported = ""
    while "ReceiptRecorded" not in exported and time.monotonic() < deadline:
        exported = _get(env, "/v1/audit/export")
        time.sleep(0.2)
    path = tmp_path / "export.ndjson"
    path.write_text(exported)
    verified = run_python(["log", "verify", str(path), "--identity", str(receiver)], env)
    assert verified.status == 0, verified.stderr
    report = verified.json()
    assert report["ok"] is True and report["receipts"]["verified"] >= 1
    assert report["entries"] == len(exported.strip().split("\n")) - 1
    vkey = json.loads(Path(str(receiver).replace(".json", ".log.json")).read_text())["vkey"]
    node = run_node(["log", "verify", str(path), "--vkey", vkey], env)
    assert node.status == 0, node.stderr
    assert node.json() == report

    lines = exported.strip().split("\n")
    target = next(i for i, line in enumerate(lines) if '"TransferCreated"' in line)
    lines[target] = lines[target].replace('"tr_', '"tr_X', 1)
    (tmp_path / "edited.ndjson").write_text("\n".join(lines) + "\n")
    bad = run_python(["log", "verify", str(tmp_path / "edited.ndjson"), "--vkey", vkey], env)
    assert bad.status == 5
    assert bad.json()["problem"]["line"] == target + 1
    assert f"line {target + 1}: leaf" in bad.stderr
    assert run_node(["log", "verify", str(tmp_path / "edited.ndjson"), "--vkey", vkey], env).json() == bad.json()


# --- A log that forks, for the witness ----------------------------------------------------------


def sign_note(body: str, origin: str, seed: bytes) -> str:
    """A C2SP signed note of ``body`` by the Ed25519 key of ``seed`` (what the server signs)."""
    key = Ed25519PrivateKey.from_private_bytes(seed)
    signed = note_key_id(origin, ed25519_public_key_of(seed)) + key.sign(body.encode("utf-8"))
    return f"{body}\n\u2014 {origin} {base64.b64encode(signed).decode()}\n"


def vkey_of(origin: str, public_key: bytes) -> str:
    return f"{origin}+{note_key_id(origin, public_key).hex()}+{base64.b64encode(bytes([1]) + public_key).decode()}"


class FakeLog:
    """A log made with the reference tree and signed notes: a test grows it or forks it."""

    origin = "fake.test/handoff"

    def __init__(self, seed: bytes, leaves: list[bytes]) -> None:
        self.seed = seed
        self.leaves = leaves

    def note(self) -> str:
        body = f"{self.origin}\n{len(self.leaves)}\n{base64.b64encode(mth(self.leaves)).decode()}\n"
        return sign_note(body, self.origin, self.seed)


def _serve_log(shown: Callable[[], FakeLog], vkey: str) -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *_: Any) -> None:
            pass

        def do_GET(self) -> None:
            log = shown()
            url, _, query = self.path.partition("?")
            params = dict(part.split("=") for part in query.split("&") if part)
            status, body, kind = 404, b"{}", "application/json"
            if url == "/v1/log/key":
                status, body = 200, json.dumps({"vkey": vkey}).encode()
            elif url == "/v1/log/checkpoint":
                status, body, kind = 200, log.note().encode(), "text/plain"
            elif url == "/v1/log/proof/consistency":
                first, second = int(params["from"]), int(params["to"])
                if second > len(log.leaves):
                    status, body = 400, json.dumps({"error": {"code": "VALIDATION_ERROR", "message": "beyond", "status": 400}}).encode()
                else:
                    hashes = proof(first, log.leaves[:second])
                    status, body = 200, json.dumps({"from": first, "to": second, "proof": [base64.b64encode(h).decode() for h in hashes]}).encode()
            self.send_response(status)
            self.send_header("content-type", kind)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_log_witness_follows_a_growing_log_and_catches_a_fork(tmp_path: Path) -> None:
    keys = generate_ed25519_key_pair()
    vkey = vkey_of(FakeLog.origin, keys.public_key)
    log = FakeLog(keys.private_key, [f"leaf {i}".encode() for i in range(5)])
    shown = [log]
    serving = _serve_log(lambda: shown[0], vkey)
    url = next(serving)
    env = {"HANDOFF_URL": url, "HANDOFF_API_KEY": "hnd_any"}
    state = tmp_path / "witness"
    try:
        first = run_python(["log", "witness", "--state", str(state)], env)
        assert first.status == 0, first.stderr
        assert first.json()["size"] == 5
        log.leaves.extend(f"leaf {i}".encode() for i in range(5, 9))
        grown = run_python(["log", "witness", "--state", str(state)], env)
        assert grown.status == 0, grown.stderr
        assert grown.json()["size"] == 9

        # Another tree of the same size under the same key: leaf 3 onwards rewritten.
        shown[0] = FakeLog(keys.private_key, [*log.leaves[:3], *[f"other {i}".encode() for i in range(6)]])
        forked = run_python(["log", "witness", "--state", str(state)], env)
        assert forked.status == 5
        assert "(LOG_FORKED)" in forked.stderr and forked.stdout == ""
        # A smaller tree that is not a prefix of the one kept, whose server cannot prove otherwise.
        shown[0] = FakeLog(keys.private_key, [log.leaves[0], b"rewritten"])
        smaller = run_python(["log", "witness", "--state", str(state)], env)
        assert smaller.status == 5
        assert "(LOG_FORKED)" in smaller.stderr
        kept = json.loads((state / "log.json").read_text())
        assert kept == {"vkey": vkey, "checkpoint": log.note()}
    finally:
        next(serving, None)
