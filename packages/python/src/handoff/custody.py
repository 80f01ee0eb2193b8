"""The client's view of the transparency log (decisions 9.5-9.7), as flows: the Node SDK's
LogWitness, key-proof check and receipts, over the pure checks of transparency.py.

The log's verifier key is pinned at first use and the newest checkpoint seen is kept, in the same
file the Node SDK keeps beside the identity (``<name>.log.json``: ``{"vkey", "checkpoint"}``, mode
0600), so a Python and a Node client of one agent hold one view of the log.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from urllib.parse import quote
from collections.abc import Generator, Mapping
from typing import Any

from .crypto import from_base64, to_base64
from .errors import HandoffApiError, HandoffCustodyError, HandoffError
from .files import write_private_file
from .identity import Identity
from .pins import beside_identity
from .protocol import Effect, Outcome, RequestSpec, Settings, call, request
from .transparency import (
    Checkpoint,
    TransparencyError,
    VerifierKey,
    check_key_proof,
    open_checkpoint,
    parse_vkey,
    sign_receipt,
    verify_consistency,
)

Flow = Generator[Effect, Outcome, Any]
RECEIPT_TYPE = "handoff.receipt/v1"


def default_log_path(identity_path: str) -> str:
    """``agent.json`` → ``agent.log.json``: the log's pin lives beside the identity, as its pins do."""
    return beside_identity(identity_path, ".log.json")


def _forked(first: int, second: int) -> HandoffCustodyError:
    return HandoffCustodyError(
        "LOG_FORKED",
        f"the log's checkpoint of {second} entries does not extend the one of {first} seen before: "
        "the server shows a forked log",
    )


class LogWitness:
    """Pins the log key at first use and holds every checkpoint shown to the newest one seen
    before (a consistency proof from the server, either way round), then keeps the newer."""

    def __init__(self, settings: Settings, path: str | None, service: str | None = None) -> None:
        self.settings = settings
        self.path = path
        self._memory: dict[str, Any] | None = None
        #: Another service (a request link's) asked with no credential: an absolute URL carries none.
        self._service = service

    def _url(self, route: str) -> str:
        return f"{self._service}{route}" if self._service else route

    def observe(self, note: str) -> Generator[Effect, Outcome, Checkpoint]:
        """Checks ``note`` (signed by the pinned key) against the kept checkpoint; keeps the newer."""
        state = yield from self._pinned()
        key = parse_vkey(state["vkey"])
        seen = open_checkpoint(note, key)
        kept = open_checkpoint(state["checkpoint"], key) if state.get("checkpoint") else None
        if kept is not None:
            yield from self._require_consistent(kept, seen)
        if kept is None or seen.size > kept.size:
            self._save({**state, "checkpoint": note})
        return seen

    def log_key(self) -> Generator[Effect, Outcome, VerifierKey]:
        state = yield from self._pinned()
        return parse_vkey(state["vkey"])

    def _require_consistent(self, a: Checkpoint, b: Checkpoint) -> Flow:
        older, newer = (a, b) if a.size <= b.size else (b, a)
        if older.size == newer.size or older.size == 0:
            if older.size == newer.size and older.root != newer.root:
                raise _forked(older.size, newer.size)
            return
        try:
            answer = yield from call(
                RequestSpec("GET", self._url("/v1/log/proof/consistency"), query={"from": older.size, "to": newer.size}),
                self.settings,
            )
        except HandoffApiError as error:
            # A server that will not prove its smaller view extends the larger tree it signed
            # (400: beyond its newest checkpoint) stands by a forked log.
            if error.status not in (400, 404):
                raise
            raise _forked(older.size, newer.size) from None
        try:
            verify_consistency(older.size, newer.size, [from_base64(item) for item in answer["proof"]], older.root, newer.root)
        except (TransparencyError, HandoffError):
            raise _forked(older.size, newer.size) from None

    def _pinned(self) -> Generator[Effect, Outcome, dict[str, Any]]:
        state = self._load()
        if state is not None:
            return state
        answer = yield from call(RequestSpec("GET", self._url("/v1/log/key")), self.settings)
        parse_vkey(answer["vkey"])
        fresh: dict[str, Any] = {"vkey": answer["vkey"], "checkpoint": None}
        self._save(fresh)
        return fresh

    def _load(self) -> dict[str, Any] | None:
        if self.path is None:
            return self._memory
        try:
            with open(self.path, encoding="utf-8") as file:
                state = json.load(file)
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as error:
            raise HandoffError("INVALID_LOG_STATE", f"{self.path} cannot be read: {error}") from None
        if not isinstance(state, dict) or not isinstance(state.get("vkey"), str):
            raise HandoffError("INVALID_LOG_STATE", f"{self.path} cannot be read: not a log view")
        return state

    def _save(self, state: dict[str, Any]) -> None:
        self._memory = state
        if self.path is not None:
            write_private_file(self.path, json.dumps(state, indent=2) + "\n")


def is_person(resolved: Mapping[str, Any]) -> bool:
    """A person's receiving key is resolved by address; it has no leaf of its own."""
    return "@" in str(resolved.get("agent_id", ""))


def check_answer(witness: LogWitness, resolved: Mapping[str, Any]) -> Generator[Effect, Outcome, bool]:
    """Whether the log backs the answered keys (True) or they are a person's (False); raises
    HandoffCustodyError naming the agent when it does not."""
    if is_person(resolved) or resolved.get("public_key") is None:
        return False
    agent = resolved.get("agent_id")

    def refuse(why: str) -> HandoffCustodyError:
        return HandoffCustodyError(
            "KEY_NOT_IN_LOG",
            f"the keys the server gave for agent '{agent}' are not backed by the transparency log: {why}",
        )

    proof = resolved.get("key_proof")
    if not proof:
        raise refuse("the answer carries no key_proof")
    key = yield from witness.log_key()
    try:
        check_key_proof(proof, resolved, key)
    except (TransparencyError, KeyError, TypeError) as error:
        raise refuse(str(error)) from None
    yield from witness.observe(proof["checkpoint"])
    return True


def witness_log(settings: Settings, witness: LogWitness) -> Flow:
    """Fetches the newest checkpoint and holds it to the one kept (decisions 9.7); answers
    ``{origin, size, root}`` as the Node CLI prints it."""
    answer = yield from request(RequestSpec("GET", "/v1/log/checkpoint", accept="text/plain"), settings)
    try:
        checkpoint = yield from witness.observe(answer.content.decode("utf-8"))
    except TransparencyError as error:
        raise HandoffCustodyError("LOG_FORKED", f"the newest checkpoint is not the log's: {error}") from None
    return {"origin": checkpoint.origin, "size": checkpoint.size, "root": to_base64(checkpoint.root)}


def utc_now() -> str:
    """An ISO 8601 UTC time with milliseconds, as JavaScript's toISOString writes it."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def receipt_draft(
    transfer: Mapping[str, Any],
    download: Mapping[str, Any],
    level: str,
    files: list[dict[str, Any]],
    verdicts: list[str],
    received_at: str,
) -> dict[str, Any]:
    """The receipt of decisions 9.5 but its recipient (the agent's uuid, asked when it is sent)."""
    order = ["clean", "unscanned", "flagged", "blocked"]
    worst = max((order.index(verdict) for verdict in verdicts if verdict in order), default=0)
    return {
        "type": RECEIPT_TYPE,
        "transfer_id": transfer["id"],
        "sender_signature": download.get("sender_signature"),
        "files": files,
        "shield": None if level == "off" else {"level": level, "verdict": order[worst]},
        "received_at": received_at,
    }


def post_receipt(settings: Settings, identity: Identity, draft: dict[str, Any]) -> Flow:
    """Signs the receipt as the identity's agent and posts it; answers ``{position, leaf_index}``,
    or ``{error}`` when it was not recorded (a refused receipt never fails the receive)."""
    try:
        profile = yield from call(RequestSpec("GET", "/v1/agents/me"), settings)
        receipt = {**draft, "recipient": profile["agent"]["id"]}
        body = {"receipt": receipt, "signature": sign_receipt(identity.ed25519.private_key, receipt)}
        transfer = quote(draft["transfer_id"], safe="")
        return (
            yield from call(RequestSpec("POST", f"/v1/transfers/{transfer}/receipts", json=body), settings)
        )
    except HandoffError as error:
        return {"error": error}
