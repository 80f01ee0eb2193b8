"""Trust on first use for agents' keys, in the same pins file the Node SDK keeps.

The first keys seen for an agent are remembered; later answers with other keys are refused with
``KEY_CHANGED`` unless the caller accepts the rotation. The file (JSON, mode 0600) is read afresh
on each check and rewritten atomically, so a Python and a Node client of one agent can share it.
"""

from __future__ import annotations

import json
import re
import threading
from typing import Any

from .api_types import ResolvedAgent
from .errors import HandoffCustodyError, HandoffError, HandoffKeyChangedError
from .files import write_private_file

PinFile = dict[str, dict[str, Any]]


def beside_identity(identity_path: str, suffix: str) -> str:
    """``agent.json`` → ``agent<suffix>``: what a client keeps for an agent lives beside its identity."""
    return re.sub(r"\.json$", "", identity_path, flags=re.IGNORECASE) + suffix


def default_pins_path(identity_path: str) -> str:
    """``agent.json`` → ``agent.pins.json``: pins live beside the identity they were seen by."""
    return beside_identity(identity_path, ".pins.json")


def pin_name(agent_id: str, account: str | None) -> str:
    """One pin per agent, and per account when a disambiguator picked it."""
    return f"{agent_id}@{account}" if account else agent_id


class PinStore:
    """Pins in a file when a path is given, else for the client's lifetime only."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        self._memory: PinFile = {}
        self._lock = threading.Lock()

    def check(
        self, name: str, resolved: ResolvedAgent, accept_rotation: bool, proven_by_log: bool = False
    ) -> ResolvedAgent:
        """Checks ``resolved`` (a resolve answer) against its pin, pinning it if new. For keys the
        transparency log backs (``proven_by_log``, decisions 9.6), changed keys are taken only with a
        higher key_version (a rotation on record), and then only with ``accept_rotation``."""
        if resolved.get("public_key") is None or resolved.get("key_version") is None:
            raise HandoffError(
                "AGENT_NOT_CONNECTED",
                f"agent '{resolved.get('agent_id')}' has no public key yet "
                f"(it is {resolved.get('connection_status')})",
            )
        current = {
            "public_key": resolved["public_key"],
            "signing_public_key": resolved.get("signing_public_key"),
            "key_version": resolved["key_version"],
        }
        with self._lock:
            pins = self._load()
            pinned = pins.get(name)
            same = (
                pinned is not None
                and pinned.get("public_key") == current["public_key"]
                and pinned.get("signing_public_key") == current["signing_public_key"]
            )
            pinned_version = pinned.get("key_version") if pinned is not None else None
            rotated = isinstance(pinned_version, int) and int(current["key_version"] or 0) > pinned_version
            if pinned is not None and not same and proven_by_log and not rotated:
                raise HandoffCustodyError(
                    "KEY_NOT_IN_LOG",
                    f"the keys of agent '{name}' changed without a rotation on record in the transparency log "
                    f"(key_version {pinned.get('key_version')} → {current['key_version']})",
                )
            if pinned is not None and not same and not accept_rotation:
                raise HandoffKeyChangedError(name, pinned, current)
            if pinned is None or not same or pinned.get("key_version") != current["key_version"]:
                pins[name] = current
                self._save(pins)
        return resolved

    def _load(self) -> PinFile:
        if self.path is None:
            return self._memory
        try:
            with open(self.path, encoding="utf-8") as file:
                pins = json.load(file)
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as error:
            raise HandoffError("INVALID_PINS", f"pins file {self.path} cannot be read: {error}") from None
        if not isinstance(pins, dict):
            raise HandoffError("INVALID_PINS", f"pins file {self.path} cannot be read: not a JSON object")
        return pins

    def _save(self, pins: PinFile) -> None:
        if self.path is not None:
            write_private_file(self.path, json.dumps(pins, indent=2, ensure_ascii=False) + "\n")
