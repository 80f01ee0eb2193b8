"""``python3 -m handoff`` against a running server: the JSON, exit codes and stderr lines of Node's CLI."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, SOURCE, PythonListener, Server, new_slug, run_node, run_python, wait_until

from handoff.crypto import encrypted_size


@pytest.fixture(scope="module")
def env(server: Server) -> dict[str, str]:
    return server.new_account()


def identity(env: dict[str, str], folder: Path, prefix: str) -> tuple[Path, str]:
    slug = new_slug(prefix)
    path = folder / f"{slug}.json"
    made = run_python(["identity", "new", "--agent", slug, "--out", str(path)], env)
    assert (made.status, made.stderr) == (0, "")
    return path, slug


def test_identity_new_writes_the_file_of_5_5_and_registers_the_agent(env: dict[str, str], tmp_path: Path) -> None:
    slug = new_slug("ident")
    path = tmp_path / "id.json"
    made = run_python(["identity", "new", "--agent", slug, "--out", str(path), "--name", "Ident"], env)
    assert made.status == 0
    answer = made.json()
    assert answer["file"] == str(path) and answer["agent_id"] == slug
    assert answer["agent"]["agent_id"] == slug and answer["agent"]["name"] == "Ident"
    assert path.stat().st_mode & 0o777 == 0o600
    saved = json.loads(path.read_text())
    assert list(saved) == ["agent_id", "x25519_private_key", "x25519_public_key", "ed25519_private_key", "ed25519_public_key"]
    assert answer["agent"]["public_key"] == saved["x25519_public_key"]
    again = run_python(["identity", "new", "--agent", slug, "--out", str(path)], env)
    assert again.status == 1
    assert again.stderr == f"{path} already exists; refusing to overwrite an identity\n"
    offline = run_python(["identity", "new", "--agent", "x", "--out", str(tmp_path / "x.json"), "--no-register"], {})
    assert offline.status == 0 and offline.json()["agent"] is None


def test_a_failed_registration_leaves_no_identity_file(env: dict[str, str], tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    made = run_python(["identity", "new", "--agent", "bad slug!", "--out", str(path)], env)
    assert made.status == 1 and "INVALID_AGENT_ID" in made.stderr
    assert not path.exists()


def test_refusals_are_the_node_clis_lines_and_codes(env: dict[str, str], tmp_path: Path) -> None:
    ident, _ = identity(env, tmp_path, "refusals")
    cases = [
        (["inbox"], env),
        (["inbox", "--identity", str(ident), "--wait", "31"], env),
        (["receive", "tr_x", "--identity", str(ident), "--shield", "loose"], env),
        (["receive", "tr_x", "tr_y", "--identity", str(ident)], env),
        (["send", "--identity", str(ident), "--to", "x"], env),
        (["inbox", "--identity", str(ident)], {"HANDOFF_URL": "ftp://x"}),
        (["inbox", "--identity", str(ident)], {"HANDOFF_URL": env["HANDOFF_URL"]}),
        (["inbox", "--identity", str(tmp_path / "missing.json")], env),
        (["receive", "tr_doesnotexist", "--identity", str(ident)], env),
    ]
    for args, case_env in cases:
        python, node = run_python(args, case_env), run_node(args, case_env)
        assert (python.status, python.stderr, python.stdout) == (node.status, node.stderr, node.stdout), args
        assert python.status == 1 and python.stderr.count("\n") == 1


def test_send_inbox_and_receive(server: Server, env: dict[str, str], tmp_path: Path) -> None:
    sender, _ = identity(env, tmp_path, "sender")
    receiver, receiver_slug = identity(env, tmp_path, "receiver")
    report = tmp_path / "report.csv"
    report.write_text("a,b\n1,2\n")
    sent = run_python(["send", "--identity", str(sender), "--to", receiver_slug, "--message", "Q3", str(report)], env)
    assert (sent.status, sent.stderr) == (0, "")
    transfer = sent.json()
    assert transfer["message"] == "Q3" and transfer["files"][0]["name"] == "report.csv"
    assert transfer["total_size"] == encrypted_size(8)
    inbox = run_python(["inbox", "--identity", str(receiver), "--wait", "0"], env)
    assert inbox.status == 0
    assert [t["id"] for t in inbox.json()["transfers"]] == [transfer["id"]]
    assert inbox.stdout == run_node(["inbox", "--identity", str(receiver)], env).stdout
    received = run_python(["receive", transfer["id"], "--identity", str(receiver), "--out", str(tmp_path / "out")], env)
    assert (received.status, received.stderr) == (0, "")
    assert (tmp_path / "out" / "report.csv").read_text() == "a,b\n1,2\n"
    # A second receive of the same transfer names the next free file: nothing is overwritten.
    plain = run_python(["send", "--identity", str(sender), "--to", receiver_slug, "--plain", str(report)], env)
    assert plain.json()["is_encrypted"] is False
    again = run_python(["receive", plain.json()["id"], "--identity", str(receiver), "--out", str(tmp_path / "out")], env)
    assert again.json()["files"][0]["path"] == str(tmp_path / "out" / "report (1).csv")


def test_progress_goes_to_stderr_only_on_a_terminal(env: dict[str, str], tmp_path: Path) -> None:
    sender, _ = identity(env, tmp_path, "tty-sender")
    _, receiver_slug = identity(env, tmp_path, "tty-receiver")
    big = tmp_path / "big.bin"
    big.write_bytes(os.urandom(3 * 1024 * 1024))
    command = shlex.join([sys.executable, "-m", "handoff", "send", "--identity", str(sender), "--to", receiver_slug, str(big)])
    done = subprocess.run(
        ["script", "--quiet", "--return", "--command", command, "/dev/null"],
        env={**os.environ, **env, "PYTHONPATH": str(SOURCE)},
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert done.returncode == 0
    assert re.search(r"big\.bin \[█{20}\] 100% 3\.0/3\.0 MiB ([0-9]+\.[0-9]|--) MiB/s 0:00 left", done.stdout)


def test_listen_receives_each_new_transfer_reports_failures_and_stops_on_sigterm(
    server: Server, env: dict[str, str], tmp_path: Path
) -> None:
    sender, _ = identity(env, tmp_path, "l-sender")
    receiver, receiver_slug = identity(env, tmp_path, "l-receiver")
    broken = tmp_path / "broken.bin"
    broken.write_bytes(os.urandom(70_000))
    good = tmp_path / "good.txt"
    good.write_text("hello")
    # Waiting in the inbox before listen starts, its stored bytes cut: refused, reported, skipped.
    bad = run_python(["send", "--identity", str(sender), "--to", receiver_slug, str(broken)], env).json()
    blob = next((server.data_dir / "blobs" / "transfers" / bad["id"]).iterdir())
    blob.write_bytes(blob.read_bytes()[:-5])
    out = tmp_path / "inbox"
    listener = PythonListener(receiver, out, env)
    try:
        ok = run_python(["send", "--identity", str(sender), "--to", receiver_slug, str(good)], env).json()
        wait_until((out / "good.txt").exists, 120, 0.2)
        assert (out / "good.txt").read_text() == "hello"
    finally:
        stopped = listener.stop()
    assert stopped.status == 0
    assert [json.loads(line)["transfer_id"] for line in stopped.stdout.splitlines()] == [ok["id"]]
    assert stopped.stderr.startswith(f"listening for transfers into {out}; SIGINT or SIGTERM stops\n")
    assert f"{bad['id']}: skipped, broken.bin: record 1 failed authentication" in stopped.stderr
    assert sorted(p.name for p in out.iterdir()) == ["good.txt"]
