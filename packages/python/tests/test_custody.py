"""Custody on the Python client's side (decisions 9.5-9.7): the pure checks against published
vectors and the Node core, then key proofs, receipts, log verify and log witness against the real
server (and a key-swapping proxy, and a fake log that forks)."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import random
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import NODE_CLI, ROOT, Server, new_slug, run_node, run_python

from handoff.crypto import generate_ed25519_key_pair
from handoff.transparency import (
    NoteError,
    canonical_json,
    checkpoint_body,
    Checkpoint,
    entry_leaf_hash,
    format_verifier_key,
    leaf_hash,
    node_hash,
    open_note,
    parse_verifier_key,
    sign_note,
    verify_consistency,
    verify_export,
    verify_inclusion,
    verify_receipt,
)

# --- A reference tree (RFC 6962 2.1: MTH, PATH and PROOF as written there) -------------------------


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


def path(m: int, leaves: list[bytes]) -> list[bytes]:
    if len(leaves) <= 1:
        return []
    k = _split(len(leaves))
    if m < k:
        return [*path(m, leaves[:k]), mth(leaves[k:])]
    return [*path(m - k, leaves[k:]), mth(leaves[:k])]


def proof(m: int, leaves: list[bytes], whole: bool = True) -> list[bytes]:
    n = len(leaves)
    if m == n:
        return [] if whole else [mth(leaves)]
    k = _split(n)
    if m <= k:
        return [*proof(m, leaves[:k], whole), mth(leaves[k:])]
    return [*proof(m - k, leaves[k:], False), mth(leaves[:k])]


LEAVES = [bytes.fromhex(h) for h in ["", "00", "10", "2021", "3031", "40414243", "5051525354555657", "606162636465666768696a6b6c6d6e6f"]]
ROOTS = [
    "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
    "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
    "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
    "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
    "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
    "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
    "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
]


def _flip(hashes: list[bytes], which: int, bit: int) -> list[bytes]:
    flipped = list(hashes)
    changed = bytearray(flipped[which])
    changed[bit // 8] ^= 1 << (bit % 8)
    flipped[which] = bytes(changed)
    return flipped


def test_the_published_rfc6962_tree_verifies_with_its_reference_paths_and_proofs() -> None:
    for size in range(1, 9):
        assert mth(LEAVES[:size]).hex() == ROOTS[size - 1]
    root = bytes.fromhex(ROOTS[7])
    published = {
        0: ["96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4"],
        5: ["bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
            "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
            "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"],
    }
    for index, hashes in published.items():
        assert verify_inclusion(leaf_hash(LEAVES[index]), index, 8, [bytes.fromhex(h) for h in hashes], root)
        assert not verify_inclusion(leaf_hash(LEAVES[index]), index + 1, 8, [bytes.fromhex(h) for h in hashes], root)
    consistency = {
        (6, 8): ["0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
                 "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
                 "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"],
        (2, 5): ["5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
                 "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b"],
    }
    for (first, second), hashes in consistency.items():
        old, new = bytes.fromhex(ROOTS[first - 1]), bytes.fromhex(ROOTS[second - 1])
        assert verify_consistency(first, second, old, new, [bytes.fromhex(h) for h in hashes])
        assert not verify_consistency(first, second, new, old, [bytes.fromhex(h) for h in hashes])


def test_every_proof_of_random_trees_verifies_and_any_flipped_bit_fails() -> None:
    rng = random.Random(32)
    for size in [*range(1, 34), 64, 100, 129]:
        leaves = [rng.randbytes(rng.randrange(0, 40)) for _ in range(size)]
        root = mth(leaves)
        for index in range(size):
            audit = path(index, leaves)
            assert verify_inclusion(leaf_hash(leaves[index]), index, size, audit, root)
            if audit:
                assert not verify_inclusion(leaf_hash(leaves[index]), index, size, _flip(audit, rng.randrange(len(audit)), rng.randrange(256)), root)
        for first in range(1, size + 1):
            consistent = proof(first, leaves)
            assert verify_consistency(first, size, mth(leaves[:first]), root, consistent)
            if consistent:
                flipped = _flip(consistent, rng.randrange(len(consistent)), rng.randrange(256))
                assert not verify_consistency(first, size, mth(leaves[:first]), root, flipped)


# The published example of Go's golang.org/x/mod/sumdb/note, as the Node core's tests use it.
VKEY = "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW"
SKEY = "PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz"
TEXT = "If you think cryptography is the answer to your problem,\nthen you don't know what your problem is.\n"
NOTE = f"{TEXT}\n\u2014 PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n"


def test_signed_notes_match_gos_published_example() -> None:
    seed = base64.b64decode("+".join(SKEY.split("+")[4:]))[1:]
    assert sign_note(TEXT, "PeterNeumann", seed) == NOTE
    key = parse_verifier_key(VKEY)
    assert format_verifier_key("PeterNeumann", key.public_key) == VKEY
    assert open_note(NOTE, key) == TEXT
    with pytest.raises(NoteError):
        open_note(NOTE.replace("answer", "answers"), key)
    with pytest.raises(NoteError):
        parse_verifier_key(VKEY.replace("PeterNeumann", "PeterNeumanm"))


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
    assert canonical_json(sample) == node.stdout


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
    public key in resolve's answers (what a compromised operator would do to read what is sent)."""

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
                if proxy.swap and self.path.startswith("/v1/agents/resolve") and answer.status_code == 200:
                    data = answer.json()
                    data["public_key"] = base64.b64encode(os.urandom(32)).decode()
                    content = json.dumps(data).encode()
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
    assert verify_receipt(base64.b64decode(me["ed25519_public_key"]), receipt, receipts[0]["signature"])

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


class FakeLog:
    """A log made with the reference tree and signed notes: a test grows it or forks it."""

    origin = "fake.test/handoff"

    def __init__(self, seed: bytes, leaves: list[bytes]) -> None:
        self.seed = seed
        self.leaves = leaves

    def note(self) -> str:
        body = checkpoint_body(Checkpoint(self.origin, len(self.leaves), mth(self.leaves)))
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
    vkey = format_verifier_key(FakeLog.origin, keys.public_key)
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
        assert verify_export([json.dumps({"checkpoint": log.note()})], parse_verifier_key(vkey))["ok"] is True
        assert entry_leaf_hash({"a": 1}) == leaf_hash(b'{"a":1}')
    finally:
        next(serving, None)
