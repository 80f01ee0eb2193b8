"""The client commands of decisions 5.5 (``identity new``, ``send``, ``receive``, ``inbox``, ``listen``),
``log verify`` (9.7) and request links (10.5: ``request create|list|revoke``, ``send --to-request``).

The same arguments, JSON on stdout, exit codes (0, 1, 3, 5) and stderr lines as the Node CLI's
``handoff``, so a test of one judges the other unchanged.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from types import FrameType
from typing import Any, NoReturn
from urllib.parse import urlparse

from . import __version__
from .client import Client
from .errors import HandoffCustodyError, HandoffError, describe_error
from .export_check import verify_export
from .identity import create_identity, load_identity, save_identity
from .pins import beside_identity
from .receiving import ReceivedFile, ReceiveResult
from .shield import ShieldLevelError, parse_shield_level
from .progress import ProgressBars
from .terminal import terminal_safe
from .transparency import TransparencyError, VerifierKey, parse_vkey

DEFAULT_HANDOFF_URL = "http://127.0.0.1:8080"
MAX_INBOX_WAIT_SECONDS = 30
EXIT_BLOCKED = 3
#: What the transparency log does not back (decisions 9.6, 9.7): here, an export that does not verify.
EXIT_CUSTODY = 5
USER_AGENT = "handoff-cli-python/{version}"

USAGE = """usage: python3 -m handoff <command>

Client commands (HANDOFF_URL, default http://127.0.0.1:8080, and HANDOFF_API_KEY):
  identity new --agent SLUG --out FILE [--name N] [--no-register]
                                          make an agent's key pairs into FILE (0600) and register it
  send --identity FILE --to RECIPIENT [--account A] [--message M] [--max-downloads N]
       [--expires-in 24h] [--plain] [--accept-rotation] PATH...
                                          encrypt, sign and send files or folders; prints the transfer
  send --resume TRANSFER_ID --identity FILE
                                          finish a send that was interrupted, from FILE.sends/
  send --to-request URL [--sender-name N] [--sender-email E] [--identity FILE] PATH...
                                          answer a request link (no account needed): encrypted to
                                          its agent's key once the log proves it, else exit 5
  request create --identity FILE --title T [--message M] [--max-files N] [--max-size BYTES]
       [--expires-in 7d] [--uses N] [--ask-name] [--ask-email] [--json]
                                          a request link to the agent of FILE; prints the link
  request list                            the account's request links as JSON (never their tokens)
  request revoke ID [--yes]               the link answers 410 from now on
  receive TRANSFER_ID --identity FILE [--out DIR] [--shield LEVEL] [--accept-rotation] [--no-receipt]
                                          download, verify, decrypt and scan into DIR (default .);
                                          exit 3 when Shield blocked a file; then a signed receipt
  inbox --identity FILE [--wait SECONDS]  the agent's inbox (long-poll up to 30 s)
  listen --identity FILE --out DIR [--shield LEVEL] [--no-receipt]
                                          receive each new transfer until SIGINT/SIGTERM
  log verify FILE [--vkey VKEY | --identity FILE]
                                          check an audit export offline: the checkpoint's signature
                                          by the log key (VKEY, else the one pinned beside the
                                          identity), every inclusion proof, leaf order, receipts;
                                          prints the report, exit 5 naming the first bad line
  log witness --state DIR                 check the log's newest checkpoint extends the one kept
                                          in DIR, keep it; exit 5 on a forked log
  Shield levels: off, permissive, standard (default), strict, paranoid. --accept-rotation takes
  a peer's changed keys instead of refusing them (keys are pinned on first use, and must be in the
  transparency log with a higher key_version: exit 5 when the log does not back them, or forked)."""


class UsageError(Exception):
    """A command line that cannot run: one line on stderr, pointing at the help."""


class ArgumentCountError(UsageError):
    """Too many arguments for a command: worded as the Node CLI's parser words it, pointing at
    that command's own --help."""

    def __init__(self, command: str, expected: int, got: int) -> None:
        plural = "" if expected == 1 else "s"
        super().__init__(
            f"error: too many arguments for '{command}'. Expected {expected} argument{plural} but got {got}."
        )


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def _parser(*positionals: str) -> _Parser:
    parser = _Parser(add_help=False, allow_abbrev=False)
    for name in positionals:
        parser.add_argument(name, nargs="*")
    return parser


def _required(value: str | None, flag: str) -> str:
    if not value:
        raise UsageError(f"{flag} is required")
    return value


def _integer(text: str | None, flag: str, low: int, high: int) -> int | None:
    if text is None:
        return None
    if not re.fullmatch(r"[0-9]+", text) or not low <= int(text) <= high:
        raise UsageError(f"{flag} must be a whole number from {low} to {high}")
    return int(text)


def _shield(text: str | None) -> str | None:
    if text is None:
        return None
    try:
        return parse_shield_level(text)
    except ShieldLevelError as error:
        raise UsageError(f"--shield: {error}") from None


def _settings() -> tuple[str, str]:
    base_url = os.environ.get("HANDOFF_URL") or DEFAULT_HANDOFF_URL
    parsed = urlparse(base_url)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise ValueError(f'HANDOFF_URL must be an http or https URL, got "{base_url}"')
    api_key = os.environ.get("HANDOFF_API_KEY")
    if not api_key:
        raise ValueError("HANDOFF_API_KEY is not set: give the API key of the agent's account")
    return base_url, api_key


def _user_agent() -> str:
    return USER_AGENT.format(version=__version__)


def _agent_client(identity_path: str) -> Client:
    base_url, api_key = _settings()
    identity = load_identity(os.path.abspath(identity_path))
    return Client(base_url, api_key, identity, user_agent=_user_agent())


def _print_json(value: Any) -> None:
    sys.stdout.write(terminal_safe(json.dumps(value, indent=2, ensure_ascii=False), keep_newlines=True) + "\n")
    sys.stdout.flush()


def _print_json_line(value: Any) -> None:
    sys.stdout.write(terminal_safe(json.dumps(value, separators=(",", ":"), ensure_ascii=False)) + "\n")
    sys.stdout.flush()


def _warn(line: str) -> None:
    sys.stderr.write(terminal_safe(line) + "\n")
    sys.stderr.flush()


def _blocked(files: list[ReceivedFile]) -> list[ReceivedFile]:
    return [file for file in files if file["shield"]["verdict"] == "blocked"]


def _blocked_line(transfer_id: str, files: list[ReceivedFile]) -> str:
    """"tr_… : Shield blocked invoice.pdf (disguised_executable)": names each file and why."""
    named = []
    for file in files:
        kinds = list(dict.fromkeys(finding["kind"] for finding in file["shield"]["findings"]))
        named.append(f"{file['name']} ({', '.join(kinds)})")
    return f"{transfer_id}: Shield blocked {', '.join(named)}; not written"


# --- commands -------------------------------------------------------------------------------------


def identity_new(args: list[str]) -> int:
    parser = _parser()
    parser.add_argument("--agent")
    parser.add_argument("--out")
    parser.add_argument("--name")
    parser.add_argument("--no-register", action="store_true")
    values = parser.parse_args(args)
    agent_id = _required(values.agent, "--agent SLUG")
    path = os.path.abspath(_required(values.out, "--out FILE"))
    if os.path.exists(path):
        raise ValueError(f"{path} already exists; refusing to overwrite an identity")
    client = None if values.no_register else Client(*_settings(), user_agent=_user_agent())
    identity = create_identity(agent_id)
    save_identity(path, identity)
    agent = None
    try:
        if client is not None:
            with client:
                agent = client.register_agent(identity, name=values.name)
    except BaseException:
        os.unlink(path)
        raise
    _print_json({"file": path, "agent_id": identity.agent_id, "agent": agent})
    return 0


_TRANSFER_ID = re.compile(r"tr_[A-Za-z0-9_-]{1,64}")
#: Errors after which a send can never be finished: its state goes with them.
_FINISHED = ("ALREADY_CONFIRMED", "TRANSFER_EXPIRED")


def _state_path(identity: str, transfer_id: str) -> str:
    """Decisions 7.2: an unfinished send's state, beside the identity file that sends it."""
    return f"{os.path.abspath(identity)}.sends/{transfer_id}.json"


def _write_state(identity: str, state: dict[str, Any]) -> None:
    """Mode 0600 from its first byte (it holds K), written whole and renamed over."""
    path = _state_path(identity, state["transfer_id"])
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    temporary = f"{path}.{os.getpid()}.tmp"
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as file:
        file.write(json.dumps(state, indent=2) + "\n")
        file.flush()
        os.fsync(file.fileno())
    os.replace(temporary, path)


def _read_state(identity: str, transfer_id: str) -> dict[str, Any]:
    path = _state_path(identity, transfer_id)
    try:
        with open(path, encoding="utf-8") as file:
            state = json.load(file)
    except FileNotFoundError:
        raise HandoffError(
            "NO_SEND_STATE",
            f"no interrupted send of {transfer_id} for {identity} ({path} does not exist): it completed, "
            "or it was sent with another identity file",
        ) from None
    except ValueError:
        state = None
    if not isinstance(state, dict) or state.get("transfer_id") != transfer_id or not isinstance(state.get("files"), list):
        raise HandoffError("BAD_SEND_STATE", f"{path} is not the state of the send of {transfer_id}")
    return state


def _remove_state(identity: str, transfer_id: str) -> None:
    path = _state_path(identity, transfer_id)
    try:
        os.remove(path)
        os.rmdir(os.path.dirname(path))
    except OSError:
        pass


def _resume(identity: str, values: argparse.Namespace) -> int:
    """``send --resume TRANSFER_ID --identity FILE``: the state file holds the rest of the send."""
    transfer_id = values.resume
    if not _TRANSFER_ID.fullmatch(transfer_id):
        raise UsageError(f'--resume needs a transfer id (tr_…), got "{transfer_id}"')
    others = [name for name, value in vars(values).items() if name not in ("identity", "resume") and value]
    if others:
        raise UsageError("--resume takes only --identity: the send's state file names its files, recipient and options")
    state = _read_state(identity, transfer_id)
    with _agent_client(identity) as client, ProgressBars(sys.stderr) as bars:
        try:
            transfer = client.resume_send(state, on_progress=bars.on_progress)
        except HandoffError as error:
            if error.code in _FINISHED:
                _remove_state(identity, transfer_id)
            raise
    _remove_state(identity, transfer_id)
    _print_json(transfer)
    return 0


#: What a link's sender may say beside the files; everything else belongs to a send to an agent.
_LINK_FLAGS = {"paths", "identity", "to_request", "sender_name", "sender_email"}


def send(args: list[str]) -> int:
    parser = _parser("paths")
    for flag in (
        "--identity",
        "--to",
        "--account",
        "--message",
        "--max-downloads",
        "--expires-in",
        "--resume",
        "--to-request",
        "--sender-name",
        "--sender-email",
    ):
        parser.add_argument(flag)
    parser.add_argument("--plain", action="store_true")
    parser.add_argument("--accept-rotation", action="store_true")
    parser.add_argument("--no-receipt", action="store_true")
    values = parser.parse_intermixed_args(args)
    if values.to_request is not None:
        return _send_to_link(values)
    identity = _required(values.identity, "--identity FILE")
    if values.resume is not None:
        return _resume(identity, values)
    to = _required(values.to, "--to RECIPIENT")
    if not values.paths:
        raise UsageError("give at least one PATH to send")
    max_downloads = _integer(values.max_downloads, "--max-downloads", 1, 1000)
    # A presigned send keeps its state beside the identity file from before its first byte (7.2).
    started: list[str] = []

    def on_started(state: dict[str, Any]) -> None:
        _write_state(identity, state)
        started.append(state["transfer_id"])

    with _agent_client(identity) as client, ProgressBars(sys.stderr) as bars:
        try:
            transfer = client.send(
                to,
                [os.path.abspath(path) for path in values.paths],
                account=values.account,
                message=values.message,
                max_downloads=max_downloads,
                expires_in=values.expires_in,
                plain=values.plain,
                accept_rotation=values.accept_rotation,
                on_progress=bars.on_progress,
                on_started=on_started,
            )
        except HandoffError as error:
            if not started:
                raise
            raise HandoffError(
                error.code,
                f"{error.message}; to finish the send: handoff send --resume {started[0]} --identity {identity}",
            ) from error
    for transfer_id in started:
        _remove_state(identity, transfer_id)
    _print_json(transfer)
    return 0


def _link_sender_client(identity: str | None) -> Client:
    """As the agent of an identity file when given (its pinned log view checks the link's key),
    else as the account of HANDOFF_API_KEY when set, else as someone with no account: a request
    link needs none (its token is the credential)."""
    if identity:
        return _agent_client(identity)
    if os.environ.get("HANDOFF_API_KEY"):
        return Client(*_settings(), user_agent=_user_agent())
    return Client(os.environ.get("HANDOFF_URL") or DEFAULT_HANDOFF_URL, "", user_agent=_user_agent())


def _send_to_link(values: argparse.Namespace) -> int:
    """``send --to-request URL [--sender-name N] [--sender-email E] [--identity FILE] PATH...``
    (decisions 10.5): encrypted to the link's agent once the log proves its key (exit 5 otherwise,
    nothing sent); prints ``{transfer_id, status}``."""
    given = {name for name, value in vars(values).items() if value not in (None, False)}
    if given - _LINK_FLAGS:
        raise UsageError("--to-request takes only --sender-name, --sender-email and --identity: the link sets the rest")
    if not values.paths:
        raise UsageError("give at least one PATH to send")
    with _link_sender_client(values.identity) as client, ProgressBars(sys.stderr) as bars:
        sent = client.send_to_request(
            values.to_request,
            [os.path.abspath(path) for path in values.paths],
            sender_name=values.sender_name,
            sender_email=values.sender_email,
            on_progress=bars.on_progress,
        )
    _print_json(sent)
    return 0


def request_create(args: list[str]) -> int:
    """``request create --identity FILE --title T [--message M] [--max-files N] [--max-size BYTES]
    [--expires-in D] [--uses N] [--ask-name] [--ask-email] [--json]``: a request link to the agent of
    FILE (decisions 10.1); prints its page (its token shown this once), or with --json the answer."""
    parser = _parser()
    for flag in ("--identity", "--title", "--message", "--max-files", "--max-size", "--expires-in", "--uses"):
        parser.add_argument(flag)
    for flag in ("--ask-name", "--ask-email", "--json"):
        parser.add_argument(flag, action="store_true")
    values = parser.parse_args(args)
    identity = _required(values.identity, "--identity FILE")
    title = _required(values.title, "--title T")
    with _agent_client(identity) as client:
        link = client.create_request(
            title,
            message=values.message,
            max_files=_integer(values.max_files, "--max-files", 1, 1000),
            max_total_size=_integer(values.max_size, "--max-size", 1, 2**53 - 1),
            expires_in=values.expires_in,
            max_uses=_integer(values.uses, "--uses", 1, 1000),
            ask_sender_name=values.ask_name or None,
            ask_sender_email=values.ask_email or None,
        )
    if values.json:
        _print_json(link)
    else:
        sys.stdout.write(terminal_safe(link["url"]) + "\n")
    return 0


def request_list(args: list[str]) -> int:
    """``request list``: ``{requests}``, the account's links newest first (never their tokens)."""
    _parser().parse_args(args)
    with Client(*_settings(), user_agent=_user_agent()) as client:
        _print_json({"requests": client.list_requests()})
    return 0


def request_revoke(args: list[str]) -> int:
    """``request revoke ID [--yes]``: the link answers 410 from now on; asks first on a terminal."""
    parser = _parser("id")
    parser.add_argument("--yes", "-y", action="store_true")
    values = parser.parse_intermixed_args(args)
    if len(values.id) != 1:
        raise UsageError("give the link's ID (request list shows it)")
    request_id = values.id[0]
    if not values.yes:
        if not (sys.stdin.isatty() and sys.stderr.isatty()):
            raise UsageError(f"Revoke request link {request_id} cannot be undone: add --yes to confirm it")
        sys.stderr.write(f"Revoke request link {terminal_safe(request_id)}? This cannot be undone. [y/N] ")
        if not re.fullmatch(r"y(es)?", input().strip(), re.IGNORECASE):
            return 1
    with Client(*_settings(), user_agent=_user_agent()) as client:
        _print_json(client.revoke_request(request_id))
    return 0


def _warn_refused_receipt(outcome: dict[str, Any]) -> None:
    """A receipt the service did not record: one stderr line, the receive stands (decisions 9.5)."""
    if "error" in outcome:
        _warn(f"the receipt was not recorded: {describe_error(outcome['error'])}")


def receive(args: list[str]) -> int:
    parser = _parser("transfer_id")
    for flag in ("--identity", "--out", "--shield"):
        parser.add_argument(flag)
    parser.add_argument("--accept-rotation", action="store_true")
    parser.add_argument("--no-receipt", action="store_true")
    values = parser.parse_intermixed_args(args)
    identity = _required(values.identity, "--identity FILE")
    positionals: list[str] = values.transfer_id
    transfer_id = _required(positionals[0] if positionals else None, "TRANSFER_ID")
    if len(positionals) > 1:
        raise ArgumentCountError("receive", 1, len(positionals))
    shield = _shield(values.shield)
    with _agent_client(identity) as client, ProgressBars(sys.stderr) as bars:
        result = client.receive(
            transfer_id,
            os.path.abspath(values.out or "."),
            shield=shield,
            accept_rotation=values.accept_rotation,
            on_progress=bars.on_progress,
            receipt=not values.no_receipt,
            on_receipt=_warn_refused_receipt,
        )
    _print_json(result)
    blocked = _blocked(result["files"])
    if not blocked:
        return 0
    _warn(_blocked_line(result["transfer_id"], blocked))
    return EXIT_BLOCKED


def inbox(args: list[str]) -> int:
    parser = _parser()
    parser.add_argument("--identity")
    parser.add_argument("--wait")
    values = parser.parse_args(args)
    identity = _required(values.identity, "--identity FILE")
    wait = _integer(values.wait, "--wait", 0, MAX_INBOX_WAIT_SECONDS)
    with _agent_client(identity) as client:
        _print_json(client.whole_inbox(wait))
    return 0


class _Stopped(BaseException):
    """SIGTERM, raised where the process waits, as SIGINT raises KeyboardInterrupt."""


def _raise_stopped(_signal: int, _frame: FrameType | None) -> None:
    raise _Stopped()


def listen(args: list[str]) -> int:
    parser = _parser()
    for flag in ("--identity", "--out", "--shield"):
        parser.add_argument(flag)
    parser.add_argument("--no-receipt", action="store_true")
    values = parser.parse_args(args)
    identity = _required(values.identity, "--identity FILE")
    out_dir = os.path.abspath(_required(values.out, "--out DIR"))
    shield = _shield(values.shield)
    client = _agent_client(identity)
    os.makedirs(out_dir, exist_ok=True)

    def received(result: ReceiveResult) -> None:
        _print_json_line(result)
        for file in _blocked(result["files"]):
            _warn(_blocked_line(result["transfer_id"], [file]))

    signal.signal(signal.SIGTERM, _raise_stopped)
    _warn(f"listening for transfers into {out_dir}; SIGINT or SIGTERM stops")
    try:
        with client:
            client.listen(
                out_dir,
                shield=shield,
                stop=threading.Event(),
                on_received=received,
                on_failed=lambda transfer_id, error: _warn(f"{transfer_id}: skipped, {describe_error(error)}"),
                on_error=lambda error: _warn(f"reading the inbox failed, trying again: {describe_error(error)}"),
                receipt=not values.no_receipt,
                on_receipt=_warn_refused_receipt,
            )
    except (KeyboardInterrupt, _Stopped):
        pass
    return 0


def _log_key(vkey: str | None, identity: str | None) -> VerifierKey:
    """--vkey, else the log key pinned beside --identity (``<name>.log.json``, decisions 9.6)."""
    if vkey is None:
        if identity is None:
            raise UsageError("give the log's key: --vkey VKEY, or --identity FILE whose pinned key to use")
        with open(beside_identity(os.path.abspath(identity), ".log.json"), encoding="utf-8") as file:
            pinned = json.load(file)
        vkey = pinned.get("vkey") if isinstance(pinned, dict) else None
    try:
        return parse_vkey(vkey if isinstance(vkey, str) else "")
    except TransparencyError as error:
        raise UsageError(f"the log's verifier key: {error}") from None


def log_verify(args: list[str]) -> int:
    """Checks an audit export offline, line by line; prints the report as JSON, exit 5 naming the
    first bad line (as the Node CLI)."""
    parser = _parser("file")
    parser.add_argument("--vkey")
    parser.add_argument("--identity")
    values = parser.parse_intermixed_args(args)
    files: list[str] = values.file
    path = _required(files[0] if files else None, "FILE")
    if len(files) > 1:
        raise ArgumentCountError("log verify", 1, len(files))
    key = _log_key(values.vkey, values.identity)
    with open(os.path.abspath(path), encoding="utf-8", newline="") as export:
        report = verify_export((line.rstrip("\r\n") for line in export), key)
    _print_json(report)
    if "problem" not in report:
        return 0
    _warn(f"{path}: line {report['problem']['line']}: {report['problem']['message']}")
    return EXIT_CUSTODY


def log_witness(args: list[str]) -> int:
    """``log witness --state DIR`` (decisions 9.7): the newest checkpoint held to the one kept in
    DIR (the log key pinned there at first use), then kept; prints ``{origin, size, root}`` as the
    Node CLI does. A forked log is one stderr line and exit 5."""
    parser = _parser()
    parser.add_argument("--state")
    values = parser.parse_args(args)
    state = os.path.abspath(_required(values.state, "--state DIR"))
    os.makedirs(state, mode=0o700, exist_ok=True)
    base_url, api_key = _settings()
    with Client(base_url, api_key, user_agent=_user_agent(), log_path=os.path.join(state, "log.json")) as client:
        _print_json(client.witness_log())
    return 0


COMMANDS: list[tuple[list[str], Callable[[list[str]], int]]] = [
    (["identity", "new"], identity_new),
    (["send"], send),
    (["receive"], receive),
    (["inbox"], inbox),
    (["listen"], listen),
    (["log", "verify"], log_verify),
    (["log", "witness"], log_witness),
    (["request", "create"], request_create),
    (["request", "list"], request_list),
    (["request", "revoke"], request_revoke),
]


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("help", "--help", "-h"):
        (sys.stdout if args else sys.stderr).write(USAGE + "\n")
        return 0 if args else 1
    for words, command in COMMANDS:
        if args[: len(words)] == words:
            try:
                return command(args[len(words) :])
            except ArgumentCountError as error:
                _warn(f"{error} (handoff {' '.join(words)} --help shows its usage)")
                return 1
            except UsageError as error:
                _warn(f"{error} (handoff help lists the commands)")
                return 1
            except KeyboardInterrupt:
                return 130
            except HandoffCustodyError as error:
                _warn(describe_error(error))
                return EXIT_CUSTODY
            except Exception as error:
                _warn(describe_error(error))
                return 1
    _warn(f"unknown command: {' '.join(args)} (handoff help lists the commands)")
    return 1
