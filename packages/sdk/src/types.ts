/** The API's answers as the SDK reads them (interface spec section 2 and decisions 3). */

export type TransferMode = "agent-to-agent" | "agent-to-human" | "human-to-agent";
export type TransferStatus =
  | "pending"
  | "pending_recipient"
  | "active"
  | "downloaded"
  | "expired"
  | "deleted";

/** POST /v1/agents/register (one-shot). */
export interface Agent {
  id: string;
  agent_id: string;
  name: string | null;
  connection_status: "pending" | "connected";
  public_key?: string;
  key_version?: number;
  inbox_url: string;
  created_at: string;
  message: string;
}

/** GET /v1/agents/resolve. */
export interface ResolvedAgent {
  agent_id: string;
  public_key: string | null;
  public_key_algorithm: "X25519";
  key_version: number | null;
  signing_public_key: string | null;
  connection_status: "pending" | "connected";
}

export interface TransferFileInfo {
  name: string;
  size: number;
  type: string;
}

/** Spec 2.3. */
export interface Transfer {
  id: string;
  url: string;
  api_url: string;
  status: TransferStatus;
  pending_reason: string | null;
  mode: TransferMode;
  sender: string;
  recipient: string;
  files: TransferFileInfo[];
  file_count: number;
  total_size: number;
  max_downloads: number;
  downloads: number;
  is_encrypted: boolean;
  auto_delete: boolean;
  message: string | null;
  created_at: string;
  expires_at: string;
}

export interface InboxPage {
  transfers: Transfer[];
  next_cursor: string | null;
  has_more: boolean;
}

/** GET /v1/transfers/{id}/download. */
export interface DownloadAnswer {
  id: string;
  files: { file_name: string; download_url: string; size: number; encryption_iv: string | null }[];
  downloads: number;
  downloads_remaining: number;
  expires_at: string;
  auto_delete: boolean;
  is_encrypted: boolean;
  encrypted_key: string | null;
  encryption_algorithm: string | null;
  recipient_key_version: number | null;
  sender_signature: string | null;
  sender_public_key: string | null;
  recipient_public_key: string | null;
}

/** POST /v1/transfers/presigned. */
export interface PresignedAnswer {
  id: string;
  upload_urls: {
    file_id: string;
    file_name: string;
    upload_url: string;
    method: string;
    headers: Record<string, string>;
  }[];
  confirm_url: string;
  expires_at: string;
}

/** GET /v1/agents/me: the startup profile (spec 4.8). */
export interface Profile {
  agent: {
    id: string;
    agent_id: string;
    name: string | null;
    description: string | null;
    connection_status: "connected";
    key_version: number;
    public_key_algorithm: "X25519";
    last_seen_at: string;
  };
  account: { plan: string; email: string };
  plan_limits: {
    transfers_per_month: number | null;
    storage_bytes: number | null;
    max_file_size: number | null;
    max_agents: number | null;
    max_connections: number | null;
  };
  connections: {
    active: number;
    pending_incoming: number;
    pending_outgoing: number;
    paired_agents: string[];
  };
  inbox: {
    unread_transfers: number;
    recent: {
      id: string;
      sender: string;
      status: "pending" | "active";
      file_count: number;
      total_size: number;
      message: string | null;
      is_encrypted: boolean;
      created_at: string;
      expires_at: string;
    }[];
  };
  broadcasts: {
    unread_count: number;
    urgent: {
      id: string;
      title: string;
      severity: "action_required" | "critical";
      content: string;
      created_at: string;
    }[];
  };
  sdk: { latest_versions: { node: string; python: string; mcp: string } };
}

export type BroadcastSeverity = "info" | "action_required" | "critical";

/** Spec 2.5. */
export interface Broadcast {
  id: string;
  title: string;
  content: string;
  severity: BroadcastSeverity;
  affected_components: string[];
  agent_count: number;
  created_at: string;
}

export interface BroadcastPage {
  broadcasts: Broadcast[];
  total: number;
  limit: number;
  offset: number;
  has_more: boolean;
}

/** Decisions 3.18. */
export interface Connection {
  id: string;
  status: "pending" | "active" | "declined" | "revoked";
  direction: "outgoing" | "incoming";
  peer_account: { id: string; name: string; email_masked: string };
  created_at: string;
  updated_at: string;
}

/** Spec 2.2. */
export interface SendableAgent {
  id: string;
  agent_id: string;
  name: string | null;
  own: boolean;
  account_name?: string;
}

/** Who caused an event (decisions 6.1). */
export type ActorKind = "api_key" | "session" | "connection_token" | "admin" | "system" | "signed_url";

/** One event as history shows it (decisions 6.1): no secrets, personal data opened or "[erased]". */
export interface HistoryEntry {
  /** Opaque; sorts in log order. */
  position: string;
  type: string;
  at: string;
  actor: { kind: ActorKind; account_id: string | null; agent_id: string | null; key_id: string | null };
  data: Record<string, unknown>;
}

export interface AuditPage {
  entries: HistoryEntry[];
  next_cursor: string | null;
  has_more: boolean;
}

/** An account's month as the log stood at `head_position` (decisions 6.4). */
export interface ComplianceReport {
  account_id: string;
  month: string;
  generated_at: string | null;
  head_position: string | null;
  transfers: {
    created: number;
    downloaded: number;
    expired: number;
    deleted: number;
    bytes_uploaded: number;
    downloads: number;
  };
  by_agent: { agent_id: string; sent: number; received: number; downloads: number; bytes_uploaded: number }[];
  api_keys: { created: number; revoked: number };
  connections: { requested: number; accepted: number; declined: number; revoked: number };
  erasures: number;
}

/** GET /v1/agents and GET /v1/agents/{id}: an agent as its own account sees it. */
export interface AccountAgent {
  id: string;
  agent_id: string;
  name: string | null;
  description: string | null;
  webhook_url: string | null;
  /** Decisions 8.3: null while no URL is set. */
  webhook_status: "active" | "disabled" | null;
  /** Only in the answer that first set a webhook_url (decisions 8.1). */
  webhook_secret?: string;
  agent_type: string;
  connection_status: "pending" | "connected" | "disconnected";
  public_key?: string;
  signing_public_key?: string | null;
  key_version?: number;
  last_seen_at: string | null;
  metadata: Record<string, unknown>;
  created_at: string;
}

/** A webhook message and its attempts (decisions 8.3). */
export interface WebhookDelivery {
  message_id: string;
  type: string;
  status: "pending" | "delivered" | "failed";
  attempts: { at: string; status_code: number | null; duration_ms: number; error: string | null }[];
  next_attempt_at: string | null;
}

/** GET /v1/agents/{id}/webhook-deliveries: newest first. */
export interface WebhookDeliveryPage {
  deliveries: WebhookDelivery[];
  next_cursor: string | null;
  has_more: boolean;
}

/** What PATCH /v1/agents/{id} changes; only the fields present change. */
export interface AgentChanges {
  name?: string;
  description?: string | null;
  webhook_url?: string | null;
  agent_type?: string;
  metadata?: Record<string, unknown>;
}

/** GET /v1/transfers (decisions 3.10). */
export interface TransferPage {
  transfers: Transfer[];
  total: number;
  limit: number;
  offset: number;
  has_more: boolean;
}

/** GET /v1/api-keys: a key in use, never the key itself. */
export interface ApiKeyInfo {
  id: string;
  name: string;
  created_at: string;
}

/** POST /v1/api-keys: the new key, shown this once. */
export interface IssuedApiKey extends ApiKeyInfo {
  api_key: string;
}

/** DELETE /v1/accounts/{account_id}/api-keys/{key_id}. */
export interface RevokedApiKey {
  id: string;
  name: string;
  status: "revoked";
  revoked_at: string;
}

/** GET /v1/account: the caller's account, its plan's limits and the credential it called with. */
export interface WhoAmI {
  account: {
    id: string;
    email: string;
    name: string;
    plan: string;
    kind: "human" | "agent";
    email_verified?: boolean;
    created_at: string;
  };
  plan_limits: Profile["plan_limits"];
  credential: { kind: "api_key" | "session"; key_id: string | null };
}
