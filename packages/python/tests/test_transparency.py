"""handoff.transparency against published vectors and a reference tree, and ``log verify``.

tests/vectors/transparency.json holds, each with its source and licence: transparency-dev/merkle's
inclusion and consistency probes and the RFC 6962 8-leaf tree of certificate-transparency's tests,
cyberphone's RFC 8785 input/output pairs and the ES6 number file's checksums, and Go's sumdb/note
example note and keys. The reference tree below is RFC 6962 2.1 written out as the RFC states it.
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import struct
from collections.abc import Callable, Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from handoff import cli
from handoff.transparency import (
    TransparencyError,
    canonical_json,
    es_number,
    leaf_hash,
    node_hash,
    note_key_id,
    open_checkpoint,
    open_note,
    parse_vkey,
    verify_consistency,
    verify_inclusion,
)

VECTORS: dict[str, Any] = json.loads((Path(__file__).parent / "vectors" / "transparency.json").read_text("utf-8"))


def b64(text: str | None) -> bytes:
    return base64.b64decode(text or "")


# --- a reference tree (RFC 6962 2.1) ---------------------------------------------------------------


def split_point(n: int) -> int:
    """The largest power of two smaller than n."""
    k = 1
    while k * 2 < n:
        k *= 2
    return k


class ReferenceTree:
    def __init__(self, leaves: list[bytes]) -> None:
        self.hashes = [leaf_hash(leaf) for leaf in leaves]
        self.mth = lru_cache(maxsize=None)(self._mth)

    def _mth(self, start: int, end: int) -> bytes:
        n = end - start
        if n == 0:
            return hashlib.sha256(b"").digest()
        if n == 1:
            return self.hashes[start]
        k = split_point(n)
        return node_hash(self.mth(start + 0, start + k), self.mth(start + k, end))

    def path(self, m: int, start: int, end: int) -> list[bytes]:
        """PATH(m, D[start:end]) of RFC 6962 2.1.1."""
        n = end - start
        if n == 1:
            return []
        k = split_point(n)
        if m < k:
            return self.path(m, start, start + k) + [self.mth(start + k, end)]
        return self.path(m - k, start + k, end) + [self.mth(start, start + k)]

    def subproof(self, m: int, start: int, end: int, whole: bool) -> list[bytes]:
        """SUBPROOF(m, D[start:end], b) of RFC 6962 2.1.2."""
        n = end - start
        if m == n:
            return [] if whole else [self.mth(start, end)]
        k = split_point(n)
        if m <= k:
            return self.subproof(m, start, start + k, whole) + [self.mth(start + k, end)]
        return self.subproof(m - k, start + k, end, False) + [self.mth(start, start + k)]


def random_tree(size: int, rng: random.Random) -> ReferenceTree:
    return ReferenceTree([rng.randbytes(rng.randrange(0, 40)) for _ in range(size)])


def flip_bit(data: bytes, bit: int) -> bytes:
    flipped = bytearray(data)
    flipped[bit // 8] ^= 1 << (bit % 8)
    return bytes(flipped)


def refused(check: Callable[[], object]) -> bool:
    try:
        check()
    except TransparencyError:
        return True
    return False


# --- Merkle: published vectors --------------------------------------------------------------------


def test_the_rfc_6962_tree_of_eight_leaves_has_the_published_roots_at_every_size() -> None:
    leaves = [bytes.fromhex(text) for text in VECTORS["rfc6962"]["leaves_hex"]]
    roots = [bytes.fromhex(text) for text in VECTORS["rfc6962"]["roots_hex"]]
    tree = ReferenceTree(leaves)
    for size, root in enumerate(roots):
        assert tree.mth(0, size) == root
        for index in range(size):
            verify_inclusion(index, size, tree.hashes[index], tree.path(index, 0, size), root)
        for earlier in range(1, size + 1):
            verify_consistency(earlier, size, tree.subproof(earlier, 0, size, True), roots[earlier], root)


@pytest.mark.parametrize("probe", VECTORS["merkle"]["inclusion"], ids=lambda probe: str(probe["file"]))
def test_transparency_dev_inclusion_probes(probe: dict[str, Any]) -> None:
    proof = [b64(item) for item in probe["proof"]]

    def check() -> None:
        verify_inclusion(probe["leafIdx"], probe["treeSize"], b64(probe["leafHash"]), proof, b64(probe["root"]))

    assert refused(check) == probe["wantErr"]


#: Probes whose "roots" are not 32 bytes ("don't care 2") but equal, for equal sizes: the Go code
#: compares the bytes and accepts them; this verifier refuses anything that is not a SHA-256 hash.
STRICTER = {"consistency/additional/sizes-are-equal-one-and-proof-is-empty.json"}


@pytest.mark.parametrize("probe", VECTORS["merkle"]["consistency"], ids=lambda probe: str(probe["file"]))
def test_transparency_dev_consistency_probes(probe: dict[str, Any]) -> None:
    proof = [b64(item) for item in probe["proof"]]

    def check() -> None:
        verify_consistency(probe["size1"], probe["size2"], proof, b64(probe["root1"]), b64(probe["root2"]))

    assert refused(check) == (probe["wantErr"] or probe["file"] in STRICTER)


# --- Merkle: random trees -------------------------------------------------------------------------


def test_every_inclusion_proof_of_random_trees_of_1_to_300_leaves_verifies_and_a_flipped_bit_fails() -> None:
    rng = random.Random(6962)
    for size in range(1, 301):
        tree = random_tree(size, rng)
        root = tree.mth(0, size)
        for index in range(size):
            proof = tree.path(index, 0, size)
            verify_inclusion(index, size, tree.hashes[index], proof, root)
            # One random bit of the leaf hash, the root or a proof element, flipped.
            parts = [tree.hashes[index], root, *proof]
            which = rng.randrange(len(parts))
            parts[which] = flip_bit(parts[which], rng.randrange(256))
            leaf, bad_root, *bad_proof = parts
            assert refused(lambda: verify_inclusion(index, size, leaf, bad_proof, bad_root))
        # A proof of one index holds for no other.
        if size > 1:
            index = rng.randrange(size)
            proof = tree.path(index, 0, size)
            assert refused(lambda: verify_inclusion((index + 1) % size, size, tree.hashes[index], proof, root))


def test_every_bit_of_an_inclusion_proof_matters() -> None:
    rng = random.Random(9162)
    for size in (2, 3, 5, 8, 13, 21):
        tree = random_tree(size, rng)
        root = tree.mth(0, size)
        for index in range(size):
            proof = tree.path(index, 0, size)
            for element in range(len(proof)):
                for bit in range(256):
                    bad = list(proof)
                    bad[element] = flip_bit(bad[element], bit)
                    assert refused(lambda: verify_inclusion(index, size, tree.hashes[index], bad, root))


def consistency_pairs(size: int, rng: random.Random) -> Iterator[int]:
    """Every earlier size up to 64 leaves, then twenty random ones and the edges."""
    if size <= 64:
        yield from range(1, size + 1)
    else:
        yield from {1, 2, size - 1, size, *(rng.randrange(1, size + 1) for _ in range(20))}


def test_consistency_proofs_of_random_trees_of_1_to_300_leaves_verify_and_a_flipped_bit_fails() -> None:
    rng = random.Random(8785)
    for size in range(1, 301):
        tree = random_tree(size, rng)
        root = tree.mth(0, size)
        for earlier in consistency_pairs(size, rng):
            old_root = tree.mth(0, earlier)
            proof = tree.subproof(earlier, 0, size, True)
            verify_consistency(earlier, size, proof, old_root, root)
            parts = [old_root, root, *proof]
            which = rng.randrange(len(parts))
            parts[which] = flip_bit(parts[which], rng.randrange(256))
            bad_old, bad_new, *bad_proof = parts
            assert refused(lambda: verify_consistency(earlier, size, bad_proof, bad_old, bad_new))
            if earlier < size:
                assert refused(lambda: verify_consistency(earlier, size, proof[:-1], old_root, root))
                assert refused(lambda: verify_consistency(earlier, size, [*proof, root], old_root, root))


# --- RFC 8785 --------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", VECTORS["jcs"]["cases"], ids=lambda case: str(case["name"]))
def test_cyberphone_canonicalization_cases(case: dict[str, str]) -> None:
    value: Any = json.loads(case["input"])
    assert canonical_json(value) == bytes.fromhex(case["output_hex"])


def es6_test_doubles(count: int) -> Iterator[float]:
    """The doubles of es6testfile100m.txt in order, as numgen.go generates them."""
    numbers = VECTORS["jcs"]["es6_numbers"]
    static = [int(text, 16) for text in numbers["static_u64"]]
    serial = [int(numbers["serial_start"], 16) + i for i in range(numbers["serial_count"])]
    produced = 0
    for bits in static + serial:
        if produced == count:
            return
        yield struct.unpack("<d", struct.pack("<Q", bits))[0]
        produced += 1
    block, data = bytes(32), b""
    while produced < count:
        value = 0.0
        while value == 0.0 or value != value or value in (float("inf"), float("-inf")):
            if not data:
                block = hashlib.sha256(block).digest()
                data = block
            value = struct.unpack("<d", data[:8])[0]
            data = data[8:]
        yield value
        produced += 1


def test_es6_number_serialization_matches_the_published_checksums() -> None:
    numbers = VECTORS["jcs"]["es6_numbers"]
    digest = hashlib.sha256()
    wanted = {int(lines): checksum for lines, checksum in numbers["sha256_by_lines"].items()}
    for line, value in enumerate(es6_test_doubles(max(wanted)), start=1):
        bits = struct.unpack("<Q", struct.pack("<d", value))[0]
        digest.update(f"{bits:x},{es_number(value)}\n".encode("ascii"))
        if line in wanted:
            assert digest.hexdigest() == wanted[line], f"the first {line} lines differ"
    for sample in numbers["sample_lines"]:
        bits_hex, expected = sample.split(",")
        assert es_number(struct.unpack("<d", struct.pack("<Q", int(bits_hex, 16)))[0]) == expected


def test_canonical_json_refuses_what_has_no_canonical_form_and_writes_big_integers_as_javascript() -> None:
    assert canonical_json({"b": [1, 2.5, None], "a": "\u2028\x7f\x1f"}) == '{"a":"\u2028\x7f\\u001f","b":[1,2.5,null]}'.encode()
    assert canonical_json(2**64) == b"18446744073709552000"
    for bad in (float("nan"), float("inf"), "\ud800"):
        with pytest.raises(TransparencyError):
            canonical_json(bad)


# --- signed notes ----------------------------------------------------------------------------------


def test_go_sumdb_note_example_opens_with_its_key_and_only_with_it() -> None:
    note = VECTORS["note"]
    text, peter, enoch = note["text"], note["peter_signature"], note["enoch_signature"]
    key = parse_vkey(note["vkey"])
    assert key.name == "PeterNeumann" and key.key_id.hex() == "c74f20a3"
    assert open_note(f"{text}\n{peter}", key) == text
    # Another signer's line is passed over, in either order.
    assert open_note(f"{text}\n{peter}{enoch}", key) == text
    assert open_note(f"{text}\n{enoch}{peter}", key) == text
    with pytest.raises(TransparencyError, match="not signed by PeterNeumann"):
        open_note(f"{text}\n{enoch}", key)
    with pytest.raises(TransparencyError, match="invalid"):
        open_note(f"{text.replace('problem', 'answer', 1)}\n{peter}", key)
    enoch_key = parse_vkey(note["other_vkey"])
    assert open_note(f"{text}\n{peter}{enoch}", enoch_key) == text


def test_every_mangling_of_the_go_verifier_key_is_refused() -> None:
    vkey: str = VECTORS["note"]["vkey"]
    mangled = {vkey[i:j] for i in range(len(vkey) + 1) for j in range(i + 1, len(vkey) + 1)} - {vkey}
    mangled |= {vkey[:i] + chr(ord(vkey[i]) + 1) + vkey[i + 1 :] for i in range(len(vkey))}
    mangled |= set(VECTORS["note"]["bad_vkeys"])
    for bad in mangled:
        assert refused(lambda: parse_vkey(bad)), bad


class LogSigner:
    """A log key of the test's own, writing notes as decisions 9.2 describes."""

    def __init__(self, origin: str) -> None:
        self.origin = origin
        self.private = Ed25519PrivateKey.generate()
        self.public = self.private.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
        key_id = note_key_id(origin, self.public)
        typed_key = base64.b64encode(bytes([1]) + self.public).decode()
        self.vkey = f"{origin}+{key_id.hex()}+{typed_key}"

    def note(self, body: str) -> str:
        signature = note_key_id(self.origin, self.public) + self.private.sign(body.encode())
        return f"{body}\n\u2014 {self.origin} {base64.b64encode(signature).decode()}\n"

    def checkpoint(self, size: int, root: bytes, origin: str | None = None) -> str:
        return self.note(f"{origin or self.origin}\n{size}\n{base64.b64encode(root).decode()}\n")


def test_a_checkpoint_opens_with_its_log_key_and_its_own_origin_only() -> None:
    signer = LogSigner("handoff.example/handoff")
    root = hashlib.sha256(b"root").digest()
    checkpoint = open_checkpoint(signer.checkpoint(7, root), parse_vkey(signer.vkey))
    assert (checkpoint.origin, checkpoint.size, checkpoint.root) == ("handoff.example/handoff", 7, root)
    with pytest.raises(TransparencyError, match="origin"):
        open_checkpoint(signer.checkpoint(7, root, origin="elsewhere"), parse_vkey(signer.vkey))
    with pytest.raises(TransparencyError, match="not signed"):
        open_checkpoint(signer.checkpoint(7, root), parse_vkey(LogSigner("handoff.example/handoff").vkey))
    for body in ("o\n07\nAAAA\n", "o\n7\n" + base64.b64encode(b"short").decode() + "\n", "o\n7\n"):
        with pytest.raises(TransparencyError, match="checkpoint"):
            open_checkpoint(signer.note(body), parse_vkey(signer.vkey))


# --- log verify -------------------------------------------------------------------------------------

AGENT = "0b7f1e52-6a0e-4b7e-9d43-0c3f0e3c9a11"


def receipt_of(transfer_id: str) -> dict[str, Any]:
    return {
        "type": "handoff.receipt/v1",
        "transfer_id": transfer_id,
        "recipient": AGENT,
        "sender_signature": None,
        "files": [{"name": "a.txt", "size": 3, "sha256": "00" * 32, "stored_sha256": "11" * 32}],
        "shield": {"level": "standard", "verdict": "clean"},
        "received_at": "2026-11-28T10:00:00.000Z",
    }


class Export:
    """A log of entries, its tree, and the export of decisions 9.7 for some of them."""

    def __init__(self, agent_key: Ed25519PrivateKey, with_key_entry: bool = True) -> None:
        self.signer = LogSigner("127.0.0.1/handoff")
        signing = agent_key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
        receipt = receipt_of("tr_1")
        entries: list[dict[str, Any]] = [
            {"type": "AccountCreated", "stream": "account-1", "data": {"name": "ops"}},
            {"type": "AgentConnected", "stream": f"agent-{AGENT}",
             "data": {"publicKey": "x", "signingPublicKey": base64.b64encode(signing).decode(), "keyVersion": 1}},
            {"type": "TransferCreated", "stream": "transfer-tr_1", "data": {"size": 3, "ratio": 0.5}},
            {"type": "ReceiptRecorded", "stream": "transfer-tr_1",
             "data": {"receipt": receipt, "signature": base64.b64encode(agent_key.sign(canonical_json(receipt))).decode()}},
        ]
        if not with_key_entry:
            entries[1] = {"type": "AgentUpdated", "stream": f"agent-{AGENT}", "data": {"changes": {}}}
        self.entries: list[dict[str, Any]] = [
            {"position": f"{index + 1:016d}", "at": f"2026-11-28T10:00:0{index}.000Z", **entry}
            for index, entry in enumerate(entries)
        ]
        self.tree = ReferenceTree([canonical_json(entry) for entry in self.entries])

    def lines(self) -> list[dict[str, Any]]:
        size = len(self.entries)
        checkpoint = self.signer.checkpoint(size, self.tree.mth(0, size))
        return [{"checkpoint": checkpoint}] + [
            {
                "leaf_index": index,
                "entry": entry,
                "inclusion": [base64.b64encode(hash_).decode() for hash_ in self.tree.path(index, 0, size)],
            }
            for index, entry in enumerate(self.entries)
        ]


def run_verify(
    tmp_path: Path, lines: list[dict[str, Any]], capsys: pytest.CaptureFixture[str], *flags: str
) -> tuple[int, str, str]:
    path = tmp_path / "export.ndjson"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), "utf-8")
    code = cli.main(["log", "verify", str(path), *flags])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_log_verify_checks_an_export_and_prints_its_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    export = Export(Ed25519PrivateKey.generate())
    code, out, err = run_verify(tmp_path, export.lines(), capsys, "--vkey", export.signer.vkey)
    assert (code, err) == (0, "")
    assert json.loads(out) == {
        "ok": True,
        "origin": "127.0.0.1/handoff",
        "tree_size": 4,
        "entries": 4,
        "receipts": {"verified": 1, "unverifiable": 0},
    }


def test_log_verify_reads_the_log_key_pinned_beside_the_identity(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    export = Export(Ed25519PrivateKey.generate())
    (tmp_path / "bob.log.json").write_text(json.dumps({"vkey": export.signer.vkey, "checkpoint": None}))
    code, out, _ = run_verify(tmp_path, export.lines(), capsys, "--identity", str(tmp_path / "bob.json"))
    assert code == 0 and json.loads(out)["entries"] == 4
    code, out, err = run_verify(tmp_path, export.lines(), capsys, "--vkey", LogSigner("127.0.0.1/handoff").vkey)
    assert code == 5 and "line 1: the checkpoint does not verify: the note is not signed by 127.0.0.1/handoff" in err
    assert json.loads(out)["problem"]["line"] == 1


def test_a_receipt_whose_signer_has_no_key_entry_in_the_export_is_unverifiable_not_valid(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    export = Export(Ed25519PrivateKey.generate(), with_key_entry=False)
    code, out, _ = run_verify(tmp_path, export.lines(), capsys, "--vkey", export.signer.vkey)
    assert code == 0 and json.loads(out)["receipts"] == {"verified": 0, "unverifiable": 1}


def tampered_exports(export: Export) -> Iterator[tuple[str, list[dict[str, Any]], str]]:
    lines = export.lines()
    edited = json.loads(json.dumps(lines))
    edited[3]["entry"]["data"]["size"] = 4
    yield "an edited entry", edited, "line 4: leaf 2 is not in the checkpoint's tree as given"
    swapped = [lines[0], lines[1], lines[3], lines[2], lines[4]]
    yield "swapped entries", swapped, "line 4: leaf 1 comes after leaf 2"
    forged = json.loads(json.dumps(lines))
    forged[4]["entry"]["data"]["signature"] = base64.b64encode(Ed25519PrivateKey.generate().sign(b"x")).decode()
    yield "a forged receipt", forged, "line 5: leaf 3 is not in the checkpoint's tree as given"
    bad_proof = json.loads(json.dumps(lines))
    bad_proof[2]["inclusion"][0] = base64.b64encode(bytes(32)).decode()
    yield "a wrong proof", bad_proof, "line 3: leaf 1 is not in the checkpoint's tree as given"
    yield "a missing checkpoint", lines[1:], "line 1: the export does not start with a checkpoint"


@pytest.mark.parametrize("case", range(5))
def test_log_verify_exits_5_naming_the_first_bad_line(
    case: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    export = Export(Ed25519PrivateKey.generate())
    what, lines, message = list(tampered_exports(export))[case]
    code, out, err = run_verify(tmp_path, lines, capsys, "--vkey", export.signer.vkey)
    assert code == 5, what
    assert f"export.ndjson: {message}\n" in err, (what, err)
    line, text = message.removeprefix("line ").split(": ", 1)
    assert json.loads(out)["problem"] == {"line": int(line), "message": text}


def test_a_receipt_signed_by_another_key_than_the_recipients_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The log holds the receipt as posted (the service did not check it here): the verifier does."""
    export = Export(Ed25519PrivateKey.generate())
    receipt = export.entries[3]["data"]["receipt"]
    export.entries[3]["data"]["signature"] = base64.b64encode(
        Ed25519PrivateKey.generate().sign(canonical_json(receipt))
    ).decode()
    export.tree = ReferenceTree([canonical_json(entry) for entry in export.entries])
    code, _, err = run_verify(tmp_path, export.lines(), capsys, "--vkey", export.signer.vkey)
    assert code == 5 and "line 5: the receipt at leaf 3 is not signed by its recipient's key" in err
