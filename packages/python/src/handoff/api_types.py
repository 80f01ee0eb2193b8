"""The API's answers as the Python client returns them: generated from docs/openapi.json by
packages/python/scripts/generate_types.py. Do not edit; run the script after `npm run contract`."""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict


class Broadcast(TypedDict):
    """An announcement from the operator (spec 2.5)"""

    id: str
    title: str
    #: Markdown
    content: str
    severity: BroadcastSeverity
    affected_components: list[str]
    #: How many agents it was delivered to
    agent_count: int
    #: ISO 8601 time (UTC)
    created_at: str


class BroadcastPage(TypedDict):
    """A page of the calling agent's unread broadcasts"""

    broadcasts: list[Broadcast]
    total: int
    limit: int
    offset: int
    has_more: bool


#: How urgent a broadcast is; action_required and critical are shown at start-up
BroadcastSeverity = Literal["info", "action_required", "critical"]


class ConfirmedRequestTransfer(TypedDict):
    """The transfer, active once confirmed"""

    transfer_id: str
    status: str


class Connection(TypedDict):
    """A connection between the caller's account and another (decisions 3.18)"""

    id: str
    status: Literal["pending", "active", "declined", "revoked"]
    direction: Literal["outgoing", "incoming"]
    peer_account: ConnectionPeerAccount
    #: ISO 8601 time (UTC)
    created_at: str
    #: ISO 8601 time (UTC)
    updated_at: str


class ConnectionList(TypedDict):
    """The caller's connections"""

    connections: list[Connection]


class ConnectionPeerAccount(TypedDict):
    id: str
    name: str
    email_masked: str


class InboxPage(TypedDict):
    """Incoming transfers of an agent"""

    transfers: list[Transfer]
    #: Pass as `cursor` for the next page
    next_cursor: str | None
    has_more: bool


class IssuedRequestLink(TypedDict):
    """A new request link, with its token and page"""

    id: str
    #: `hrq_` + 32 base64url characters: shown this once, never again
    token: str
    #: {PUBLIC_BASE_URL}/r/{token}: the page a person opens to send
    url: str
    #: The receiving agent's slug
    agent: str
    title: str
    message: str | None
    max_files: int
    max_total_size: int
    #: ISO 8601 time (UTC)
    expires_at: str
    max_uses: int
    uses: int
    status: RequestStatus
    #: ISO 8601 time (UTC)
    created_at: str


class KeyProof(TypedDict):
    """The leaf that set the agent's current keys, proven in a signed checkpoint (decisions 9.6); null until a checkpoint covers it (within about a second of a registration)"""

    leaf_index: int
    entry: LogEntry
    tree_size: int
    #: The signed note of the tree the proof is against
    checkpoint: str
    inclusion: list[str]


class LinkSender(TypedDict):
    """Someone without an account who answered a request link: what they typed, unverified"""

    kind: Literal["link"]
    #: The name the sender typed, unverified; null when none
    name: str | None
    #: The e-mail address the sender typed, unverified; null when none
    email: str | None
    verified: Literal[False]


class LogEntry(TypedDict):
    """A leaf of the log: its bytes are this object's RFC 8785 canonical JSON (decisions 9.1)"""

    position: str
    type: str
    stream: str
    at: str
    #: As stored: personal data sealed (decisions 6.5)
    data: dict[str, Any]


class PresignedTransfer(TypedDict):
    """A presigned transfer: upload each file to its link, then confirm"""

    id: str
    upload_urls: list[PresignedUploadLink]
    confirm_url: str
    #: When the upload links expire
    expires_at: str


class PresignedUploadLink(TypedDict):
    """Where one file of a presigned transfer is uploaded (decisions 3.16, 7.1)"""

    file_id: str
    file_name: str
    upload_url: str
    #: The same file as a tus 1.0.0 upload resource (decisions 7.1)
    resumable_url: str
    method: Literal["PUT"]
    #: Headers the upload must carry
    headers: dict[str, str]


class Profile(TypedDict):
    """Everything an agent needs at start-up, in one call (spec 4.8)"""

    agent: ProfileAgent
    account: ProfileAccount
    plan_limits: ProfilePlanLimits
    connections: ProfileConnections
    inbox: ProfileInbox
    broadcasts: ProfileBroadcasts
    sdk: ProfileSdk


class ProfileAccount(TypedDict):
    plan: str
    email: str


class ProfileAgent(TypedDict):
    id: str
    agent_id: str
    name: str | None
    description: str | None
    connection_status: Literal["connected"]
    key_version: int
    public_key_algorithm: Literal["X25519"]
    #: ISO 8601 time (UTC)
    last_seen_at: str


class ProfileBroadcasts(TypedDict):
    unread_count: int
    urgent: list[ProfileBroadcastsUrgentItem]


class ProfileBroadcastsUrgentItem(TypedDict):
    id: str
    title: str
    severity: Literal["action_required", "critical"]
    content: str
    #: ISO 8601 time (UTC)
    created_at: str


class ProfileConnections(TypedDict):
    active: int
    pending_incoming: int
    pending_outgoing: int
    paired_agents: list[str]


class ProfileInbox(TypedDict):
    unread_transfers: int
    recent: list[ProfileInboxRecentItem]


class ProfileInboxRecentItem(TypedDict):
    id: str
    sender: str
    status: Literal["pending", "active"]
    file_count: int
    total_size: int
    message: str | None
    is_encrypted: bool
    #: ISO 8601 time (UTC)
    created_at: str
    #: ISO 8601 time (UTC)
    expires_at: str


class ProfilePlanLimits(TypedDict):
    #: null: unlimited
    transfers_per_month: int | None
    #: null: unlimited
    storage_bytes: int | None
    #: null: unlimited
    max_file_size: int | None
    #: null: unlimited
    max_agents: int | None
    #: null: unlimited
    max_connections: int | None


class ProfileSdk(TypedDict):
    latest_versions: ProfileSdkLatestVersions


class ProfileSdkLatestVersions(TypedDict):
    node: str
    python: str
    mcp: str


class PublicRequest(TypedDict):
    """What a request link shows whoever holds its token: never the account or its other agents"""

    title: str
    message: str | None
    agent: PublicRequestAgent
    max_files: int
    max_total_size: int
    #: ISO 8601 time (UTC)
    expires_at: str
    ask_sender_name: bool
    ask_sender_email: bool


class PublicRequestAgent(TypedDict):
    agent_id: str
    name: str | None
    #: X25519 (base64): encrypt the content key to it (decisions 5.2)
    public_key: str
    key_version: int
    #: The log's proof of this key (decisions 9.6): check it before encrypting a byte
    key_proof: KeyProof | None


class RegisteredAgent(TypedDict):
    """A newly registered agent; two-step registrations carry their connection token"""

    id: str
    agent_id: str
    name: str | None
    connection_status: Literal["pending", "connected"]
    public_key: NotRequired[str]
    key_version: NotRequired[int]
    #: Two-step only: the one-time token for POST /v1/agents/connect
    connection_token: str | None
    claim_code: str | None
    token_expires_at: str | None
    inbox_url: str
    #: With a webhook_url: its signing secret, shown once
    webhook_secret: NotRequired[str]
    #: ISO 8601 time (UTC)
    created_at: str
    message: str


class RequestLink(TypedDict):
    """A request link (never its token, shown once at creation)"""

    id: str
    #: The receiving agent's slug
    agent: str
    title: str
    message: str | None
    max_files: int
    max_total_size: int
    #: ISO 8601 time (UTC)
    expires_at: str
    max_uses: int
    uses: int
    status: RequestStatus
    #: ISO 8601 time (UTC)
    created_at: str


class RequestLinkList(TypedDict):
    """Request links"""

    requests: list[RequestLink]


#: active: takes files; used: its uses are spent; expired; revoked by its owner
RequestStatus = Literal["active", "used", "expired", "revoked"]


class RequestTransfer(TypedDict):
    """A transfer through a request link: upload each file (PUT or tus), then confirm"""

    transfer_id: str
    upload_urls: list[PresignedUploadLink]
    #: POST it, with no credential, once every file is uploaded
    confirm_url: str


class ResolvedAgent(TypedDict):
    """The keys to encrypt for an agent or a person (spec 4.7)"""

    #: The agent's slug, or the person's e-mail address
    agent_id: str
    #: Base64 X25519 public key to encrypt for; null while pending
    public_key: str | None
    public_key_algorithm: Literal["X25519"]
    key_version: int | None
    #: Base64 Ed25519 key that verifies the agent's signatures
    signing_public_key: str | None
    connection_status: Literal["pending", "connected"]
    #: An agent's: the log's proof of these keys (decisions 9.6); null for a person
    key_proof: KeyProof | None


class SendableAgent(TypedDict):
    """An agent the caller may send to (spec 2.2)"""

    id: str
    agent_id: str
    name: str | None
    #: Whether the agent is on the caller's own account
    own: bool
    #: The other account's name, for agents of connected accounts
    account_name: NotRequired[str]


class SendableAgentList(TypedDict):
    """Agents the caller may send to"""

    agents: list[SendableAgent]


class Transfer(TypedDict):
    """A transfer (spec 2.3)"""

    id: str
    url: str
    api_url: str
    status: TransferStatus
    pending_reason: str | None
    mode: TransferMode
    #: Mode `request`: the request link it came through (decisions 10.3); else null
    request_id: str | None
    sender: str | LinkSender
    recipient: str
    files: list[TransferFileInfo]
    file_count: int
    total_size: int
    max_downloads: int
    downloads: int
    is_encrypted: bool
    auto_delete: bool
    message: str | None
    #: ISO 8601 time (UTC)
    created_at: str
    #: ISO 8601 time (UTC)
    expires_at: str


class TransferDownload(TypedDict):
    """A counted download: signed links to each file and what decrypts them"""

    id: str
    files: list[TransferDownloadFilesItem]
    downloads: int
    downloads_remaining: int
    #: ISO 8601 time (UTC)
    expires_at: str
    auto_delete: bool
    is_encrypted: bool
    encrypted_key: str | None
    encryption_algorithm: str | None
    recipient_key_version: int | None
    sender_signature: str | None
    channel_id: str | None
    encryption_salt: str | None
    sender_public_key: str | None
    recipient_public_key: str | None


class TransferDownloadFilesItem(TypedDict):
    file_name: str
    #: Signed link, valid 15 minutes; honours Range
    download_url: str
    size: int
    encryption_iv: str | None


class TransferFileInfo(TypedDict):
    """One file of a transfer"""

    name: str
    size: int
    #: Media type
    type: str


#: Who sends to whom: an agent or a person on either side; `request`: someone answering a request link
TransferMode = Literal["agent-to-agent", "agent-to-human", "human-to-agent", "request"]


#: pending: files still uploading; pending_recipient: waiting for the person's receiving key; active: downloadable; downloaded: no downloads left; expired; deleted
TransferStatus = Literal["pending", "pending_recipient", "active", "downloaded", "expired", "deleted"]
