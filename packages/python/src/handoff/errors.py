"""Every error the client raises on purpose carries a stable ``code``, as the Node SDK's do.

Callers (the CLI, agent tools) branch on codes, never on messages.
"""

from __future__ import annotations

import re
from typing import Any


class HandoffError(Exception):
    """A deliberate refusal with a stable code (``NETWORK_ERROR``, ``INVALID_IDENTITY``...)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class HandoffCryptoError(HandoffError):
    """A refusal of the format core (decisions 5.2, 5.3): ``BAD_TAG``, ``TRUNCATED``..."""


class HandoffApiError(HandoffError):
    """An answer of the API that is an error: its ``{error: {code, message}}`` body, typed."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        details: Any = None,
        candidates: Any = None,
    ) -> None:
        super().__init__(code, message)
        self.status = status
        self.details = details
        self.candidates = candidates


class HandoffKeyChangedError(HandoffError):
    """A known agent answered with keys other than the pinned ones (code ``KEY_CHANGED``)."""

    def __init__(self, agent_id: str, pinned: dict[str, Any], current: dict[str, Any]) -> None:
        super().__init__(
            "KEY_CHANGED",
            f"the keys of agent '{agent_id}' changed since they were pinned "
            f"(key_version {pinned.get('key_version')} → {current.get('key_version')}); "
            "accept the rotation only if you trust it",
        )
        self.agent_id = agent_id
        self.pinned = pinned
        self.current = current


class HandoffTransferError(HandoffError):
    """A received transfer that fails decisions 5.3/5.4 or is unsafe to write."""

    def __init__(self, code: str, message: str, transfer_id: str) -> None:
        super().__init__(code, message)
        self.transfer_id = transfer_id


def describe_error(error: BaseException) -> str:
    """The one stderr line of the CLI: the message with its code, line breaks folded (as Node's)."""
    if isinstance(error, HandoffError):
        text = f"{error.message} ({error.code})"
    else:
        text = str(error) or type(error).__name__
    return one_line(text)


def one_line(text: str) -> str:
    return re.sub(r"\s*\n\s*", "; ", text).strip()


class HandoffCustodyError(HandoffError):
    """Verifiable custody failed (decisions 9.6): a key the transparency log does not back
    (``KEY_NOT_IN_LOG``) or a forked log (``LOG_FORKED``). The CLI exits 5 on it, and nothing was
    encrypted to or verified with the keys in question."""
