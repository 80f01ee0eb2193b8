"""Handoff's Python client: end-to-end encrypted, signed, pinned and scanned file transfer.

Speaks decisions 5.1–5.6 of the Handoff project byte for byte as the Node SDK does. See
docs/python.md.
"""

__version__ = "0.1.0"

from .client import AsyncClient, Client  # noqa: E402
from .errors import (  # noqa: E402
    HandoffApiError,
    HandoffCryptoError,
    HandoffError,
    HandoffKeyChangedError,
    HandoffTransferError,
)
from .identity import Identity, create_identity, load_identity, save_identity  # noqa: E402

__all__ = [
    "AsyncClient",
    "Client",
    "HandoffApiError",
    "HandoffCryptoError",
    "HandoffError",
    "HandoffKeyChangedError",
    "HandoffTransferError",
    "Identity",
    "__version__",
    "create_identity",
    "load_identity",
    "save_identity",
]
