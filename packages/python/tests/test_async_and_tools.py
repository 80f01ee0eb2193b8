"""The asynchronous client and the agent-framework tools against a running server."""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import subprocess
from pathlib import Path

import pytest
from conftest import ROOT, Server

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


# Lists the Node MCP server's tools over the MCP SDK's in-memory transport: what a model sees.
LIST_MCP_TOOLS = """
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { handoffMcpServer } from "./src/client/mcp/tools.ts";
const server = handoffMcpServer({ client: {}, shield: undefined, downloadsDir: "/tmp" });
const [serverSide, clientSide] = InMemoryTransport.createLinkedPair();
await server.connect(serverSide);
const client = new Client({ name: "python-tools-test", version: "1" });
await client.connect(clientSide);
const { tools } = await client.listTools();
console.log(JSON.stringify(Object.fromEntries(tools.map((tool) => [tool.name, Object.keys(tool.inputSchema.properties ?? {})]))));
await client.close();
"""


def mcp_tool_inputs() -> dict[str, list[str]]:
    """The tools and their input names as the Node MCP server (src/client/mcp/tools.ts) lists them."""
    listed = subprocess.run(
        ["node", "--conditions=source", "--import", "tsx", "--input-type=module", "-e", LIST_MCP_TOOLS],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    found: dict[str, list[str]] = json.loads(listed.stdout)
    return found


def test_the_tools_are_the_mcp_servers_with_the_same_inputs() -> None:
    described = {tool["name"]: sorted(tool["input_schema"]["properties"]) for tool in tools.TOOLS}
    assert described == {name: sorted(inputs) for name, inputs in mcp_tool_inputs().items()}
    for tool in tools.TOOLS:
        assert tool["function"].__name__ == tool["name"]
        parameters = list(inspect.signature(tool["function"]).parameters)
        assert sorted(parameters) == sorted(tool["input_schema"]["properties"])


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
