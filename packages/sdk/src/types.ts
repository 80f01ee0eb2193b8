import type { components } from "./api-types.js";

/**
 * The API's answers as the SDK reads them: the contract's named schemas (src/contract/), through
 * the types `npm run contract` generates from docs/openapi.json. Nothing here is declared twice.
 */
type Schema<Name extends keyof components["schemas"]> = components["schemas"][Name];

export type TransferMode = Schema<"TransferMode">;
/** The modes a sender asks for: `request` transfers come through a request link only. */
export type SendMode = Schema<"SendMode">;
export type TransferStatus = Schema<"TransferStatus">;

/** How long a transfer lives: `expires_in` of a send. */
export type ExpiresIn = Schema<"ExpiresIn">;

/** POST /v1/agents/register (one-shot or two-step). */
export type Agent = Schema<"RegisteredAgent">;

/** GET /v1/agents/resolve. */
export type ResolvedAgent = Schema<"ResolvedAgent">;

export type TransferFileInfo = Schema<"TransferFileInfo">;

/** Spec 2.3. */
export type Transfer = Schema<"Transfer">;

export type InboxPage = Schema<"InboxPage">;

/** GET /v1/transfers/{id}/download. */
export type DownloadAnswer = Schema<"TransferDownload">;

/** POST /v1/transfers/presigned. */
export type PresignedAnswer = Schema<"PresignedTransfer">;

/** What POST /v1/transfers/presigned takes: a transfer's fields and its files' declarations, as JSON. */
export type PresignedTransferRequest = Schema<"PresignedTransferRequest">;

/** The multipart form of POST /v1/transfers: the same fields as text, before its `files` parts. */
export type TransferForm = Schema<"TransferForm">;

/**
 * The fields both ways of sending share (the presigned JSON's, as the form's parts are named), less
 * the files and `metadata` (an object in the JSON, its text in the form).
 */
export type TransferFields = Omit<PresignedTransferRequest, "files" | "metadata">;

/** GET /v1/agents/me: the startup profile (spec 4.8). */
export type Profile = Schema<"Profile">;

export type BroadcastSeverity = Schema<"BroadcastSeverity">;

/** Spec 2.5. */
export type Broadcast = Schema<"Broadcast">;

export type BroadcastPage = Schema<"BroadcastPage">;

/** Decisions 3.18. */
export type Connection = Schema<"Connection">;

/** Spec 2.2. */
export type SendableAgent = Schema<"SendableAgent">;

/** Who caused an event (decisions 6.1). */
export type ActorKind = Schema<"ActorKind">;

/** One event as history shows it (decisions 6.1): no secrets, personal data opened or "[erased]". */
export type HistoryEntry = Schema<"HistoryEntry">;

export type AuditPage = Schema<"AuditPage">;

/** An account's month as the log stood at `head_position` (decisions 6.4). */
export type ComplianceReport = Schema<"ComplianceReport">;

/** GET /v1/agents/{id}: an agent as its own account sees it, with its keys. */
export type AccountAgent = Schema<"Agent">;

/** GET /v1/agents: an agent as its account lists it, without its keys. */
export type ListedAgent = Schema<"AgentListItem">;

/** The lists GET /v1/agents, /v1/agents/sendable, /v1/connections, /v1/api-keys and the histories answer. */
export type AgentList = Schema<"AgentList">;
export type SendableAgentList = Schema<"SendableAgentList">;
export type ConnectionList = Schema<"ConnectionList">;
export type ApiKeyList = Schema<"ApiKeyList">;
export type History = Schema<"History">;

/** What PATCH /v1/agents/{id} changes; only the fields present change. */
export type AgentChanges = Schema<"AgentUpdate">;

/** PATCH /v1/agents/{id}: the agent after the change, with `webhook_secret` the first time a URL is set. */
export type UpdatedAgent = Schema<"UpdatedAgent">;

/** A webhook message and its attempts (decisions 8.3). */
export type WebhookDelivery = Schema<"WebhookDelivery">;

/** The kinds of webhook message (decisions 8.2), as the delivery log names them. */
export type WebhookMessageType = WebhookDelivery["type"];

/** GET /v1/agents/{id}/webhook-deliveries: newest first. */
export type WebhookDeliveryPage = Schema<"WebhookDeliveryPage">;

/** GET /v1/transfers (decisions 3.10). */
export type TransferPage = Schema<"TransferPage">;

/** GET /v1/api-keys: a key in use, never the key itself. */
export type ApiKeyInfo = Schema<"ApiKey">;

/** POST /v1/api-keys: the new key, shown this once. */
export type IssuedApiKey = Schema<"IssuedApiKey">;

/** DELETE /v1/accounts/{account_id}/api-keys/{key_id}. */
export type RevokedApiKey = Schema<"RevokedApiKey">;

/** POST /v1/auth/login: a person's session and account (decisions 4.3). */
export type Session = Schema<"Session">;
export type Account = Schema<"Account">;

/** GET/PUT /v1/me/receiving-key: a person's receiving key and how its private half is derived (decisions 4.4). */
export type ReceivingKey = Schema<"ReceivingKey">;
export type Kdf = Schema<"Kdf">;

/** One try at delivering a webhook message. */
export type WebhookAttempt = Schema<"WebhookAttempt">;

/** GET /v1/account: the caller's account, its plan's limits and the credential it called with. */
export type WhoAmI = Schema<"WhoAmI">;

/** POST /v1/requests: a new request link, its token shown this once (decisions 10.1). */
export type IssuedRequestLink = Schema<"IssuedRequestLink">;

/** A request link as GET /v1/requests shows it: never its token. */
export type RequestLink = Schema<"RequestLink">;

/** GET /v1/requests. */
export type RequestLinkList = Schema<"RequestLinkList">;

/** GET /v1/requests/by-token/{token}: what the link asks for and the agent's key. */
export type PublicRequest = Schema<"PublicRequest">;

/** POST /v1/requests/by-token/{token}/transfers: where each file goes, and the confirm link. */
export type RequestTransfer = Schema<"RequestTransfer">;

/** The confirm of a transfer through a request link. */
export type ConfirmedRequestTransfer = Schema<"ConfirmedRequestTransfer">;
