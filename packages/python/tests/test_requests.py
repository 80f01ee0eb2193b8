"""Request links in the Python client (decisions 10.5), against the real server: create, list and
revoke; send_to_request checking the link's key_proof (through a key-swapping proxy too); the
request_file tool; the CLI; and a folder the Node CLI sends through a link, received byte-exact."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import Server, files_under, new_slug, run_node, run_python
from test_custody import KeySwappingProxy

from handoff import Client, load_identity, tools
from handoff.errors import HandoffApiError, HandoffCustodyError
from handoff.requesting import parse_request_link

HOSTILE = '<script>alert("x")</script>\u001b]0;pwned\u0007'


@pytest.fixture()
def env(server: Server) -> dict[str, str]:
    return server.new_account()


def _agent(env: dict[str, str], folder: Path) -> tuple[Path, Client]:
    """A fresh agent of the account (registered by the Python CLI) and its client."""
    slug = new_slug("inbox")
    path = folder / f"{slug}.json"
    made = run_python(["identity", "new", "--agent", slug, "--out", str(path)], env)
    assert made.status == 0, made.stderr
    return path, Client(env["HANDOFF_URL"], env["HANDOFF_API_KEY"], load_identity(str(path)))


def _stranger() -> Client:
    """Someone with no account: a client with no API key, which a request link needs none of."""
    return Client("http://127.0.0.1:9", "")


def _tree(root: Path) -> dict[str, bytes]:
    files = {
        "export/README.md": b"# export\n",
        "export/.hidden": b"x",
        # Real rows: random bytes named .csv are text to Shield, and now and then hold a hidden character.
        "export/data/rows.csv": b"id,square\n" + b"".join(b"%d,%d\n" % (i, i * i) for i in range(6000)),
        "export/data/deep/empty.txt": b"",
    }
    for name, content in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(content)
    return files


def test_a_person_with_no_account_sends_a_folder_and_the_agent_receives_it_byte_exact(
    env: dict[str, str], tmp_path: Path
) -> None:
    _, owner = _agent(env, tmp_path)
    link = owner.create_request("Your export", message=HOSTILE, max_files=20, max_uses=2, ask_sender_name=True)
    assert link["url"] == f"{env['HANDOFF_URL']}/r/{link['token']}"
    assert parse_request_link(link["url"]) == (env["HANDOFF_URL"], link["token"])
    tree = _tree(tmp_path / "sender")
    sent = _stranger().send_to_request(
        link["url"], [str(tmp_path / "sender" / "export")], sender_name=HOSTILE, sender_email="ada@example.com"
    )
    assert sent["status"] == "active"

    [item] = [t for t in owner.whole_inbox()["transfers"] if t["id"] == sent["transfer_id"]]
    assert item["mode"] == "request"
    assert item["sender"] == {"kind": "link", "name": HOSTILE, "email": "ada@example.com", "verified": False}
    result = owner.receive(sent["transfer_id"], str(tmp_path / "in"))
    assert sorted(file["name"] for file in result["files"]) == sorted(tree)
    for name, content in tree.items():
        assert (tmp_path / "in" / name).read_bytes() == content

    [listed] = [r for r in owner.list_requests() if r["id"] == link["id"]]
    assert (listed["uses"], listed["status"], listed["message"]) == (1, "active", HOSTILE)
    assert owner.revoke_request(link["id"])["status"] == "revoked"
    with pytest.raises(HandoffApiError) as closed:
        _stranger().send_to_request(link["url"], [str(tmp_path / "sender" / "export")])
    assert (closed.value.status, closed.value.code) == (410, "REQUEST_CLOSED")


def test_a_link_whose_key_the_log_does_not_back_is_refused_before_a_byte_is_sent(
    env: dict[str, str], tmp_path: Path
) -> None:
    _, owner = _agent(env, tmp_path)
    link = owner.create_request("Swapped")
    secret = tmp_path / "secret.txt"
    secret.write_text("for the agent only")
    proxy = KeySwappingProxy(env["HANDOFF_URL"])
    proxy.swap = True
    try:
        swapped = link["url"].replace(env["HANDOFF_URL"], proxy.url)
        with pytest.raises(HandoffCustodyError) as refused:
            _stranger().send_to_request(swapped, [str(secret)])
        assert refused.value.code == "KEY_NOT_IN_LOG"
        assert f"agent '{link['agent']}'" in str(refused.value)
        run = run_python(["send", "--to-request", swapped, str(secret)], {"HANDOFF_URL": "http://127.0.0.1:9"})
        assert run.status == 5, run.stderr
        assert "(KEY_NOT_IN_LOG)" in run.stderr and run.stdout == ""
    finally:
        proxy.close()
    assert not [line for line in proxy.seen if not line.startswith("GET ")]
    assert owner.whole_inbox()["transfers"] == []


def test_the_request_file_tool_returns_a_link_that_brings_the_file(env: dict[str, str], tmp_path: Path) -> None:
    _, owner = _agent(env, tmp_path)
    tools.configure(owner)
    try:
        link = tools.request_file("Your signed contract", message="PDF please", max_files=2, expires_in="1h")
    finally:
        tools.configure(None)
    assert (link["title"], link["max_files"], link["status"]) == ("Your signed contract", 2, "active")
    contract = tmp_path / "contract.pdf"
    contract.write_bytes(b"%PDF-1.7\n" + os.urandom(30_000))
    sent = _stranger().send_to_request(link["url"], [str(contract)])
    owner.receive(sent["transfer_id"], str(tmp_path / "in"))
    assert (tmp_path / "in" / "contract.pdf").read_bytes() == contract.read_bytes()


def test_the_cli_creates_lists_and_revokes_links_and_the_node_cli_sends_a_folder_python_receives(
    env: dict[str, str], tmp_path: Path
) -> None:
    identity, _ = _agent(env, tmp_path)
    made = run_python(
        ["request", "create", "--identity", str(identity), "--title", "Your export", "--max-files", "20", "--uses", "2"],
        env,
    )
    assert made.status == 0, made.stderr
    url = made.stdout.strip()
    assert "/r/hrq_" in url

    tree = _tree(tmp_path / "sender")
    stranger = {"HANDOFF_URL": "http://127.0.0.1:9"}
    node = run_node(["send", "--to-request", url, "--sender-name", "Ada", str(tmp_path / "sender" / "export")], stranger)
    assert node.status == 0, node.stderr
    transfer_id = node.json()["transfer_id"]
    got = run_python(["receive", transfer_id, "--identity", str(identity), "--out", str(tmp_path / "in")], env)
    assert got.status == 0, got.stderr
    assert files_under(tmp_path / "in") == sorted(
        {*tree, "export", "export/data", "export/data/deep"}
    )
    for name, content in tree.items():
        assert (tmp_path / "in" / name).read_bytes() == content

    py = run_python(["send", "--to-request", url, "--sender-email", "ada@example.com", str(tmp_path / "sender" / "export" / "README.md")], stranger)
    assert py.status == 0, py.stderr
    [listed] = run_python(["request", "list"], env).json()["requests"]
    assert (listed["uses"], listed["status"]) == (2, "used")

    refused = run_python(["request", "revoke", listed["id"]], env)
    assert refused.status == 1 and "--yes" in refused.stderr
    revoked = run_python(["request", "revoke", listed["id"], "--yes"], env)
    assert revoked.status == 0, revoked.stderr
    assert revoked.json()["status"] == "revoked"
    wrong = run_python(["send", "--to-request", url, "--plain", str(tmp_path / "x")], stranger)
    assert wrong.status == 1 and "--to-request takes only" in wrong.stderr
