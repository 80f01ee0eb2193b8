"""The asynchronous client and the agent-framework tools against a running server."""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import subprocess
from pathlib import Path

import pytest
from conftest import ROOT, SOURCE, Server

from handoff import AsyncClient, Client, create_identity, save_identity, tools


@pytest.fixture(scope="module")
def env(server: Server) -> dict[str, str]:
    return server.new_account()


def test_async_send_and_receive_both_paths(env: dict[str, str], tmp_path: Path) -> None:
    alice, bob = create_identity("async-alice"), create_identity("async-bob")
    for identity in (alice, bob):
        save_identity(str(tmp_path / f"{identity.agent_id}.json"), identity)
    small, large = tmp_path / "small.bin", tmp_path / "large.bin"
    small.write_bytes(os.urandom(100_000))
    large.write_bytes(os.urandom(9 * 1024 * 1024))

    async def main() -> list[dict[str, object]]:
        url, key = env["HANDOFF_URL"], env["HANDOFF_API_KEY"]
        async with AsyncClient(url, key, alice) as sender, AsyncClient(url, key, bob) as receiver:
            await sender.register_agent(alice)
            await sender.register_agent(bob)
            sent = [await sender.send(bob.agent_id, [str(small)]), await sender.send(bob.agent_id, [str(large)])]
            return [dict(await receiver.receive(t["id"], str(tmp_path / "out"))) for t in sent]

    results = asyncio.run(main())
    assert (tmp_path / "out" / "small.bin").read_bytes() == small.read_bytes()
    assert (tmp_path / "out" / "large.bin").read_bytes() == large.read_bytes()
    assert len(results) == 2


def mcp_tools_listed() -> str:
    """The Node MCP server's tools/list (src/client/mcp/tools.ts) now, over the MCP SDK's in-memory
    connection: what ``npm run contract`` writes into handoff/mcp_tools.json."""
    script = "const m = await import('./scripts/contract-documents.ts'); process.stdout.write(await m.mcpToolsText());"
    listed = subprocess.run(
        ["node", "--conditions=source", "--import", "tsx", "--input-type=module", "-e", script],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return listed.stdout


def test_the_tools_are_the_mcp_servers_with_the_same_inputs_outputs_and_hints() -> None:
    listed = json.loads(mcp_tools_listed())
    committed = json.loads((SOURCE / "handoff" / "mcp_tools.json").read_text())
    assert committed == listed, "handoff/mcp_tools.json is stale: run npm run contract"
    assert [
        {
            "name": tool["name"],
            "description": tool["description"],
            "inputSchema": tool["input_schema"],
            "outputSchema": tool["output_schema"],
            "annotations": tool["annotations"],
        }
        for tool in tools.TOOLS
    ] == [{key: spec[key] for key in ("name", "description", "inputSchema", "outputSchema", "annotations")} for spec in listed]
    for tool in tools.TOOLS:
        assert tool["function"].__name__ == tool["name"]
        assert tool["function"].__doc__ == tool["description"]
        parameters = list(inspect.signature(tool["function"]).parameters)
        assert sorted(parameters) == sorted(tool["input_schema"]["properties"])
        assert set(tool["annotations"]) == {"readOnlyHint", "destructiveHint", "openWorldHint"}
    hints = {tool["name"]: tool["annotations"]["readOnlyHint"] for tool in tools.TOOLS}
    assert hints == {
        "send_file": False,
        "check_inbox": True,
        "download_transfer": False,
        "request_file": False,
        "list_connections": True,
        "get_profile": True,
    }


def test_the_tools_send_check_download_and_profile(env: dict[str, str], tmp_path: Path) -> None:
    alice, bob = create_identity("tool-alice"), create_identity("tool-bob")
    for identity in (alice, bob):
        save_identity(str(tmp_path / f"{identity.agent_id}.json"), identity)
    note = tmp_path / "note.txt"
    note.write_text("hello from a tool")
    url, key = env["HANDOFF_URL"], env["HANDOFF_API_KEY"]
    with Client(url, key, alice) as sender, Client(url, key, bob) as receiver:
        sender.register_agent(alice)
        sender.register_agent(bob)
        tools.configure(sender)
        transfer = tools.send_file(bob.agent_id, [str(note)], message="hi")
        assert transfer["message"] == "hi"
        with pytest.raises(ValueError):
            tools.send_file(bob.agent_id, ["relative.txt"])
        tools.configure(receiver, downloads_dir=str(tmp_path / "dl"))
        inbox = tools.check_inbox()
        assert [t["id"] for t in inbox["transfers"]] == [transfer["id"]]
        downloaded = tools.download_transfer(transfer["id"])
        assert downloaded["files"][0]["path"] == str(tmp_path / "dl" / "note.txt")
        assert Path(downloaded["files"][0]["path"]).read_text() == "hello from a tool"
        assert tools.get_profile()["agent"]["agent_id"] == bob.agent_id
        listed = tools.list_connections()
        assert set(listed) == {"connections", "sendable"}
        assert bob.agent_id in [a["agent_id"] for a in listed["sendable"]]
        tools.configure()
