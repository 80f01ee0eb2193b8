"""The MCP server's five tools (decisions 5.5) as plain functions, for agent frameworks.

Each function takes exactly the tool's inputs (so a framework that reads signatures sees the MCP
schema) and answers the same object the MCP tool answers; ``TOOLS`` describes each with its JSON
schema, so a LangChain, CrewAI or AutoGen tool is one line around it (docs/python.md). The client
is the one given to ``configure``, else one made from the environment the CLI reads
(``HANDOFF_URL``, ``HANDOFF_API_KEY``) and ``HANDOFF_IDENTITY`` (the identity file).
``HANDOFF_SHIELD`` and ``HANDOFF_DOWNLOADS`` set the Shield level and the default download folder
(``./handoff-downloads``), as ``handoff mcp --shield/--downloads`` do; ``configure`` overrides them.
"""

from __future__ import annotations

import os
from collections.abc import Callable
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
    """Send files to an agent (its slug) or a person (an e-mail address), encrypted end to end and signed."""
    return _client().send(
        to,
        [_absolute(path, "each path") for path in paths],
        message=message,
        max_downloads=max_downloads,
        expires_in=expires_in,
        account=account,
    )


def check_inbox(wait_seconds: int = 0) -> Any:
    """List the transfers waiting in this agent's inbox, optionally waiting for a new one."""
    if not 0 <= wait_seconds <= MAX_INBOX_WAIT_SECONDS:
        raise ValueError(f"wait_seconds must be from 0 to {MAX_INBOX_WAIT_SECONDS}")
    return _client().whole_inbox(wait_seconds)


def download_transfer(transfer_id: str, out_dir: str | None = None) -> Any:
    """Download, verify, decrypt and scan (Shield) a transfer's files into a folder."""
    default = _settings.downloads or os.environ.get("HANDOFF_DOWNLOADS") or DEFAULT_DOWNLOADS
    folder = _absolute(out_dir, "out_dir") if out_dir else os.path.abspath(default)
    shield = _settings.shield or os.environ.get("HANDOFF_SHIELD") or None
    return _client().receive(transfer_id, folder, shield=shield)


def list_connections() -> Any:
    """The account connections, and the agents this agent can send to."""
    client = _client()
    return {"connections": client.connections(), "sendable": client.sendable()}


def get_profile() -> Any:
    """This agent's startup profile: agent, plan limits, inbox summary, urgent broadcasts."""
    return _client().profile()


class Tool(TypedDict):
    name: str
    description: str
    #: JSON Schema of the inputs, as the MCP server declares them.
    input_schema: dict[str, Any]
    function: Callable[..., Any]


def _object(properties: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        schema["required"] = required
    return schema


_ABSOLUTE_PATH = {"type": "string", "description": "an absolute path"}

TOOLS: list[Tool] = [
    {
        "name": "send_file",
        "description": "Send files to an agent (its slug) or a person (an e-mail address), encrypted end to end and signed. Returns the transfer.",
        "input_schema": _object(
            {
                "to": {"type": "string", "minLength": 1, "description": "recipient: an agent slug, or an e-mail address for a person"},
                "paths": {"type": "array", "items": _ABSOLUTE_PATH, "minItems": 1, "description": "absolute paths of the files to send"},
                "message": {"type": "string"},
                "max_downloads": {"type": "integer", "minimum": 1, "maximum": 1000},
                "expires_in": {"type": "string", "description": 'how long the transfer lives, e.g. "1h", "24h", "7d"'},
                "account": {"type": "string", "description": "the recipient's account, when the slug is ambiguous"},
            },
            ["to", "paths"],
        ),
        "function": send_file,
    },
    {
        "name": "check_inbox",
        "description": "List the transfers waiting in this agent's inbox, optionally waiting for a new one.",
        "input_schema": _object(
            {"wait_seconds": {"type": "integer", "minimum": 0, "maximum": MAX_INBOX_WAIT_SECONDS, "default": 0}}
        ),
        "function": check_inbox,
    },
    {
        "name": "download_transfer",
        "description": "Download, verify, decrypt and scan (Shield) a transfer's files into a folder. Returns each file's path, size and Shield verdict; a blocked file is not written.",
        "input_schema": _object(
            {
                "transfer_id": {"type": "string", "minLength": 1},
                "out_dir": {**_ABSOLUTE_PATH, "description": "absolute folder to write into, created when missing"},
            },
            ["transfer_id"],
        ),
        "function": download_transfer,
    },
    {
        "name": "list_connections",
        "description": "The account connections, and the agents this agent can send to.",
        "input_schema": _object({}),
        "function": list_connections,
    },
    {
        "name": "get_profile",
        "description": "This agent's startup profile: agent, plan limits, inbox summary, urgent broadcasts.",
        "input_schema": _object({}),
        "function": get_profile,
    },
]
