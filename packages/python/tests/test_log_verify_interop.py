"""``log verify`` of both CLIs on the server's own audit export (decisions 9.7): a Python send, a
Node receive that records a signed receipt, then the account's export checked by each CLI: the same
report and exit code for the export as served and for one with an entry edited."""

from __future__ import annotations

import json
import time
from pathlib import Path

import httpx
from conftest import Server, new_slug, run_node, run_python


def export_covering(server: Server, env: dict[str, str], entry_type: str) -> str:
    """The account's export once its checkpoint covers an entry of ``entry_type`` (a checkpoint
    is signed about a second after a commit)."""
    headers = {"authorization": f"Bearer {env['HANDOFF_API_KEY']}"}
    deadline = time.monotonic() + 60
    while True:
        answer = httpx.get(f"{server.base_url}/v1/audit/export", headers=headers, timeout=60)
        answer.raise_for_status()
        text: str = answer.text
        if any(json.loads(line).get("entry", {}).get("type") == entry_type for line in text.splitlines()[1:]):
            return text
        assert time.monotonic() < deadline, f"no {entry_type} entry in the export in time"
        time.sleep(0.5)


def test_both_clis_give_the_same_verdict_on_the_servers_export(server: Server, tmp_path: Path) -> None:
    env = server.new_account()
    sender, recipient = new_slug("lv-py"), new_slug("lv-node")
    assert run_python(["identity", "new", "--agent", sender, "--out", str(tmp_path / "py.json")], env).status == 0
    assert run_node(["identity", "new", "--agent", recipient, "--out", str(tmp_path / "node.json")], env).status == 0
    (tmp_path / "a.txt").write_text("audited")
    sent = run_python(["send", "--identity", str(tmp_path / "py.json"), "--to", recipient, str(tmp_path / "a.txt")], env)
    assert sent.status == 0, sent.stderr
    transfer_id = json.loads(sent.stdout)["id"]
    received = run_node(["receive", transfer_id, "--identity", str(tmp_path / "node.json"), "--out", str(tmp_path / "in")], env)
    assert received.status == 0, received.stderr

    export = tmp_path / "export.ndjson"
    export.write_text(export_covering(server, env, "ReceiptRecorded"), "utf-8")
    vkey = httpx.get(f"{server.base_url}/v1/log/key", timeout=60).json()["vkey"]
    python = run_python(["log", "verify", str(export), "--vkey", vkey], env)
    node = run_node(["log", "verify", str(export), "--vkey", vkey], env)
    assert (python.status, python.stderr) == (0, "")
    assert (python.status, python.stdout) == (node.status, node.stdout)
    report = json.loads(python.stdout)
    assert report["ok"] is True and report["entries"] >= 4
    assert report["receipts"] == {"verified": 1, "unverifiable": 0}

    lines = export.read_text("utf-8").splitlines()
    edited = json.loads(lines[2])
    edited["entry"]["at"] = "2000-01-01T00:00:00.000Z"
    lines[2] = json.dumps(edited)
    export.write_text("\n".join(lines) + "\n", "utf-8")
    python = run_python(["log", "verify", str(export), "--vkey", vkey], env)
    node = run_node(["log", "verify", str(export), "--vkey", vkey], env)
    assert python.status == node.status == 5
    assert (python.stdout, python.stderr) == (node.stdout, node.stderr)
    assert f"line 3: leaf {edited['leaf_index']} is not in the checkpoint's tree as given" in python.stderr
