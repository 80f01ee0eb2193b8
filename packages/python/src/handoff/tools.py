"""The MCP server's tools (decisions 5.5, and request_file of 10.5) as plain functions, for agent frameworks.

Each function takes exactly the tool's inputs (so a framework that reads signatures sees the MCP
schema) and answers the same object the MCP tool answers; ``TOOLS`` describes each with its JSON
schema, its answer's schema and its hints, read from mcp_tools.json (the MCP server's own tools/list,
written by ``npm run contract``), so a LangChain, CrewAI or AutoGen tool is one line around it
(docs/python.md); each function's docstring is its MCP description. The client
is the one given to ``configure``, else one made from the environment the CLI reads
(``HANDOFF_URL``, ``HANDOFF_API_KEY``) and ``HANDOFF_IDENTITY`` (the identity file).
``HANDOFF_SHIELD`` and ``HANDOFF_DOWNLOADS`` set the Shield level and the default download folder
(``./handoff-downloads``), as ``handoff mcp --shield/--downloads`` do; ``configure`` overrides them.
"""

# No `from __future__ import annotations`: the frameworks that wrap these functions read their
# annotations as types, not as strings.
import json
import os
from collections.abc import Callable
from importlib import resources
from typing import Any, TypedDict

from .client import Client
from .identity import load_identity

DEFAULT_HANDOFF_URL = "http://127.0.0.1:8080"
DEFAULT_DOWNLOADS = "handoff-downloads"
MAX_INBOX_WAIT_SECONDS = 30

class _Settings:
    client: Client | None = None
    downloads: str | None = None
    shield: str | None = None


_settings = _Settings()


def configure(client: Client | None = None, downloads_dir: str | None = None, shield: str | None = None) -> None:
    """The client the tools act through, the default download folder and the Shield level."""
    _settings.client, _settings.downloads, _settings.shield = client, downloads_dir, shield


def _client() -> Client:
    """The configured client, else one made once from the environment."""
    if _settings.client is None:
        api_key = os.environ.get("HANDOFF_API_KEY")
        identity_path = os.environ.get("HANDOFF_IDENTITY")
        if not api_key or not identity_path:
            raise RuntimeError("set HANDOFF_API_KEY and HANDOFF_IDENTITY (the agent's identity file)")
        identity = load_identity(os.path.abspath(identity_path))
        _settings.client = Client(os.environ.get("HANDOFF_URL") or DEFAULT_HANDOFF_URL, api_key, identity)
    return _settings.client


def _absolute(path: str, what: str) -> str:
    if not os.path.isabs(path):
        raise ValueError(f"{what} must be an absolute path, got {path!r}")
    return path


def send_file(
    to: str,
    paths: list[str],
    message: str | None = None,
    max_downloads: int | None = None,
    expires_in: str | None = None,
    account: str | None = None,
) -> Any:
    return _client().send(
        to,
        [_absolute(path, "each path") for path in paths],
        message=message,
        max_downloads=max_downloads,
        expires_in=expires_in,
        account=account,
    )


def check_inbox(wait_seconds: int = 0) -> Any:
    if not 0 <= wait_seconds <= MAX_INBOX_WAIT_SECONDS:
        raise ValueError(f"wait_seconds must be from 0 to {MAX_INBOX_WAIT_SECONDS}")
    return _client().whole_inbox(wait_seconds)


def download_transfer(transfer_id: str, out_dir: str | None = None) -> Any:
    default = _settings.downloads or os.environ.get("HANDOFF_DOWNLOADS") or DEFAULT_DOWNLOADS
    folder = _absolute(out_dir, "out_dir") if out_dir else os.path.abspath(default)
    shield = _settings.shield or os.environ.get("HANDOFF_SHIELD") or None
    return _client().receive(transfer_id, folder, shield=shield)


def request_file(
    title: str,
    message: str | None = None,
    max_files: int | None = None,
    expires_in: str | None = None,
) -> Any:
    return _client().create_request(title, message=message, max_files=max_files, expires_in=expires_in)


def list_connections() -> Any:
    client = _client()
    return {"connections": client.connections(), "sendable": client.sendable()}


def get_profile() -> Any:
    return _client().profile()


class Tool(TypedDict):
    name: str
    description: str
    #: JSON Schema of the inputs, as the MCP server declares them.
    input_schema: dict[str, Any]
    #: JSON Schema of the answer, as the MCP server declares it (its ``outputSchema``).
    output_schema: dict[str, Any]
    #: The MCP hints: ``readOnlyHint``, ``destructiveHint``, ``openWorldHint``.
    annotations: dict[str, bool]
    function: Callable[..., Any]


def _tools() -> list[Tool]:
    """The MCP server's tools/list (mcp_tools.json, written from src/client/mcp by ``npm run
    contract``), each with its function; the function's docstring is the tool's description, which
    is what LangChain's and CrewAI's decorators read."""
    listed = json.loads(resources.files("handoff").joinpath("mcp_tools.json").read_text("utf-8"))
    functions = {function.__name__: function for function in FUNCTIONS}
    tools: list[Tool] = []
    for spec in listed:
        function = functions[spec["name"]]
        function.__doc__ = spec["description"]
        tools.append(
            {
                "name": spec["name"],
                "description": spec["description"],
                "input_schema": spec["inputSchema"],
                "output_schema": spec["outputSchema"],
                "annotations": spec["annotations"],
                "function": function,
            }
        )
    return tools


FUNCTIONS: list[Callable[..., Any]] = [
    send_file,
    check_inbox,
    download_transfer,
    request_file,
    list_connections,
    get_profile,
]
TOOLS: list[Tool] = _tools()
