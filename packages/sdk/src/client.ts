import { setTimeout as sleep } from "node:timers/promises";
import { toBase64 } from "./crypto/index.js";
import { HandoffError } from "./errors.js";
import { Transport } from "./http.js";
import type { Identity } from "./identity.js";
import {
  type InboxArrival,
  type InboxEventsContext,
  type InboxEventsOptions,
  inboxArrivals,
} from "./inbox-events.js";
import { type ListenOptions, listen } from "./listen.js";
import { defaultLogPath, LogWitness } from "./log-witness.js";
import { defaultPinsPath, PinStore, pinName } from "./pins.js";
import { type ReceiveOptions, type ReceiveResult, receive } from "./receive.js";
import { parseRequestLink, type RequestSendOptions, sendToRequest } from "./request-send.js";
import { PRESIGNED_THRESHOLD, resumeSend, type SendOptions, type SendState, send } from "./send.js";
import { type KeyProof, type Receipt, signReceipt } from "./transparency/index.js";
import type {
  AccountAgent,
  Agent,
  AgentChanges,
  AgentList,
  ApiKeyInfo,
  ApiKeyList,
  AuditPage,
  BroadcastPage,
  BroadcastSeverity,
  ComplianceReport,
  ConfirmedRequestTransfer,
  Connection,
  ConnectionList,
  History,
  HistoryEntry,
  InboxPage,
  IssuedApiKey,
  IssuedRequestLink,
  ListedAgent,
  Profile,
  RequestLink,
  RequestLinkList,
  ResolvedAgent,
  RevokedApiKey,
  SendableAgent,
  SendableAgentList,
  Transfer,
  TransferPage,
  TransferStatus,
  UpdatedAgent,
  WebhookDeliveryPage,
  WhoAmI,
} from "./types.js";
import { SDK_VERSION } from "./version.js";

/** A checkpoint covers an agent's new keys within about a second (decisions 9.2): wait that long for one. */
const KEY_PROOF_ATTEMPTS = 12;
const KEY_PROOF_RETRY_MS = 250;

/** A person's receiving key is resolved by their address; it is set in a session, not an agent's leaf. */
const isPerson = (resolved: ResolvedAgent) => resolved.agent_id.includes("@");

export interface HandoffClientOptions {
  /** The service, e.g. `http://127.0.0.1:8080`. */
  baseUrl: string;
  apiKey: string;
  /** The agent this client acts as: it signs what it sends and decrypts what it receives. */
  identity?: Identity;
  /** Where pinned keys are kept; default beside the identity file (`<name>.pins.json`), else memory. */
  pinsPath?: string;
  /** Where the pinned log key and newest checkpoint are kept; default beside the identity file (`<name>.log.json`), else memory. */
  logPath?: string;
  /** For JSON requests and downloads; streamed uploads go through node:http(s) (see streaming-request.ts). */
  fetch?: typeof fetch;
  userAgent?: string;
  /** Further attempts after the first (429 always; network errors and 5xx where safe). Default 3. */
  maxRetries?: number;
  /** Bytes on the wire from which a send goes presigned rather than multipart; default PRESIGNED_THRESHOLD. */
  presignedThreshold?: number;
}

/** The Handoff API as an agent uses it: every operation of decisions 5.5, end-to-end encrypted. */
export class HandoffClient {
  private readonly transport: Transport;
  private readonly identity: Identity | null;
  private readonly pins: PinStore;
  private readonly log: LogWitness;
  /** This client's agent's uuid, which a receipt names; asked once. */
  private agentUuid: Promise<string> | null = null;
  private readonly presignedThreshold: number;

  constructor(options: HandoffClientOptions) {
    this.identity = options.identity ?? null;
    this.transport = new Transport({
      baseUrl: options.baseUrl.replace(/\/+$/, ""),
      apiKey: options.apiKey,
      fetch: options.fetch ?? globalThis.fetch,
      userAgent: options.userAgent ?? `handoff-sdk-node/${SDK_VERSION}`,
      maxRetries: options.maxRetries ?? 3,
      agentId: this.identity?.agentId ?? null,
    });
    this.presignedThreshold = options.presignedThreshold ?? PRESIGNED_THRESHOLD;
    const identityPath = this.identity?.path;
    this.pins = new PinStore(options.pinsPath ?? (identityPath ? defaultPinsPath(identityPath) : null));
    this.log = new LogWitness(
      this.transport,
      options.logPath ?? (identityPath ? defaultLogPath(identityPath) : null),
    );
  }

  private requireIdentity(operation: string): Identity {
    if (!this.identity)
      throw new HandoffError("IDENTITY_REQUIRED", `${operation} needs the agent's identity`);
    return this.identity;
  }

  /** Registers `identity`'s agent one-shot, with both public keys (spec 4.1). */
  registerAgent(identity: Identity, options: { name?: string; description?: string } = {}): Promise<Agent> {
    return this.transport.json<Agent>({
      method: "POST",
      url: "/v1/agents/register",
      idempotent: true,
      json: {
        agent_id: identity.agentId,
        public_key: toBase64(identity.x25519.publicKey),
        signing_public_key: toBase64(identity.ed25519.publicKey),
        ...options,
      },
    });
  }

  /**
   * An agent's public keys (spec 4.7), checked against the transparency log and pinned (decisions
   * 9.6): the answer's `key_proof` must prove, in a checkpoint signed by the log key pinned at first
   * use and consistent with every checkpoint seen before, the very keys answered; otherwise
   * HandoffCustodyError (KEY_NOT_IN_LOG, LOG_FORKED), before anything is encrypted or verified with
   * them. The first keys seen for an agent are remembered; other keys later are refused with
   * HandoffKeyChangedError (KEY_CHANGED) unless `acceptRotation` is set, and even then only when the
   * log shows their rotation (a higher key_version). A person's receiving key has no leaf of its own
   * and is pinned only.
   */
  async resolve(
    recipient: string,
    options: { account?: string; acceptRotation?: boolean } = {},
  ): Promise<ResolvedAgent> {
    const resolved = await this.resolveProven(recipient, options.account);
    const proven = await this.checkKeyProof(resolved);
    return this.pins.check(
      pinName(resolved.agent_id, options.account),
      resolved,
      options.acceptRotation ?? false,
      proven,
    );
  }

  /** The resolve answer, asked again for a moment while the log has not yet signed the agent's keys. */
  private async resolveProven(recipient: string, account: string | undefined): Promise<ResolvedAgent> {
    for (let attempt = 0; ; attempt++) {
      const resolved = await this.transport.json<ResolvedAgent>({
        method: "GET",
        url: "/v1/agents/resolve",
        idempotent: true,
        query: { agent_id: recipient, account },
      });
      const waiting = resolved.key_proof === null && resolved.public_key !== null && !isPerson(resolved);
      if (!waiting || attempt >= KEY_PROOF_ATTEMPTS) return resolved;
      await sleep(KEY_PROOF_RETRY_MS);
    }
  }

  /** Whether the log backs the answered keys (true), or they are a person's (false); throws when it does not. */
  private async checkKeyProof(resolved: ResolvedAgent): Promise<boolean> {
    if (isPerson(resolved) || resolved.public_key === null) return false;
    await this.log.requireProvenKeys(resolved.agent_id, resolved, resolved.key_proof as KeyProof | null);
    return true;
  }

  /** Sends files, encrypted and signed unless `plain` (see send.ts for the flow). */
  send(options: SendOptions): Promise<Transfer> {
    const identity = this.requireIdentity("send");
    return send(
      {
        transport: this.transport,
        identity,
        presignedThreshold: this.presignedThreshold,
        resolve: (to, o) => this.resolve(to, o),
      },
      options,
    );
  }

  /**
   * Finishes a presigned send that was interrupted, from the state `send` handed to `onStarted`:
   * each file goes on from the server's offset, then the transfer is confirmed (decisions 7.2).
   */
  resumeSend(state: SendState, options: Pick<SendOptions, "onProgress"> = {}): Promise<Transfer> {
    return resumeSend(this.transport, state, options);
  }

  /** The agent's incoming pending and active transfers; `wait` long-polls up to 30 s. */
  inbox(
    options: { wait?: number; cursor?: string; limit?: number; signal?: AbortSignal } = {},
  ): Promise<InboxPage> {
    return this.transport.json<InboxPage>({
      method: "GET",
      url: "/v1/transfers/inbox",
      idempotent: true,
      query: { wait: options.wait, cursor: options.cursor, limit: options.limit },
      ...(options.signal ? { signal: options.signal } : {}),
    });
  }

  /** Status and metadata of one transfer (never counts a download). */
  transfer(transferId: string): Promise<Transfer> {
    return this.transport.json<Transfer>({
      method: "GET",
      url: `/v1/transfers/${encodeURIComponent(transferId)}`,
      idempotent: true,
    });
  }

  /** Downloads, verifies, decrypts and scans a transfer into `outDir` (see receive.ts). */
  receive(transferId: string, options: ReceiveOptions): Promise<ReceiveResult> {
    return receive(
      {
        transport: this.transport,
        identity: this.identity,
        resolve: (agent, o) => this.resolve(agent, o),
        sendReceipt: (receipt) => this.sendReceipt(receipt),
      },
      transferId,
      options,
    );
  }

  /**
   * Witnesses the log (decisions 9.7): fetches the newest signed checkpoint and checks it extends the
   * newest one this client kept (a consistency proof), then keeps it. Throws LOG_FORKED otherwise.
   */
  async witnessLog(): Promise<{ origin: string; size: number; root: string; note: string }> {
    const response = await this.transport.send({
      method: "GET",
      url: "/v1/log/checkpoint",
      idempotent: true,
    });
    const note = await response.text();
    const checkpoint = await this.log.observe(note);
    return { origin: checkpoint.origin, size: checkpoint.size, root: toBase64(checkpoint.root), note };
  }

  /**
   * Signs a receipt as this client's agent and posts it (decisions 9.5); `receive` does so after
   * every receive whose signature and records verified, unless told not to.
   */
  async sendReceipt(
    receipt: Omit<Receipt, "recipient">,
  ): Promise<{ position: string; leaf_index: number | null }> {
    const identity = this.requireIdentity("a receipt");
    this.agentUuid ??= this.profile().then((profile) => profile.agent.id);
    const signed: Receipt = { ...receipt, recipient: await this.agentUuid };
    return this.transport.json({
      method: "POST",
      url: `/v1/transfers/${encodeURIComponent(receipt.transfer_id)}/receipts`,
      idempotent: true,
      json: { receipt: signed, signature: signReceipt(identity.ed25519.privateKey, signed) },
    });
  }

  /**
   * Every transfer as it reaches the agent's inbox, until `signal` aborts: from the inbox's event
   * stream, falling back to the long-poll (see inbox-events.ts).
   */
  inboxEvents(options: InboxEventsOptions): AsyncGenerator<InboxArrival> {
    return inboxArrivals(this.inboxEventsContext(), options);
  }

  /** Receives each new transfer as it arrives until `signal` aborts (see listen.ts). */
  listen(options: ListenOptions): Promise<void> {
    return listen({ ...this.inboxEventsContext(), receive: (id, o) => this.receive(id, o) }, options);
  }

  private inboxEventsContext(): InboxEventsContext {
    return {
      inbox: (o) => this.inbox(o),
      openStream: ({ after, signal }) =>
        this.transport.send({
          method: "GET",
          url: "/v1/transfers/inbox/events",
          accept: "text/event-stream",
          idempotent: true,
          query: { after },
          signal,
        }),
    };
  }

  /** The startup profile (spec 4.8). */
  profile(): Promise<Profile> {
    return this.transport.json<Profile>({ method: "GET", url: "/v1/agents/me", idempotent: true });
  }

  /** The agent's unread broadcasts, newest first (spec 4.16). */
  broadcasts(
    options: { severity?: BroadcastSeverity; limit?: number; offset?: number } = {},
  ): Promise<BroadcastPage> {
    return this.transport.json<BroadcastPage>({
      method: "GET",
      url: "/v1/broadcasts",
      idempotent: true,
      query: { severity: options.severity, limit: options.limit, offset: options.offset },
    });
  }

  /** Burns a broadcast for this agent (spec 4.17). */
  async markBroadcastRead(id: string): Promise<void> {
    await this.transport.send({
      method: "PUT",
      url: `/v1/broadcasts/${encodeURIComponent(id)}/read`,
      idempotent: true,
    });
  }

  /** The account's connections (decisions 3.18). */
  async connections(): Promise<Connection[]> {
    const answer = await this.transport.json<ConnectionList>({
      method: "GET",
      url: "/v1/connections",
      idempotent: true,
    });
    return answer.connections;
  }

  /** A transfer's history in log order (decisions 6.2). */
  async transferHistory(transferId: string): Promise<HistoryEntry[]> {
    return this.entries(`/v1/transfers/${encodeURIComponent(transferId)}/history`);
  }

  /** An agent's history in log order (decisions 6.2); `agentId` is the agent's UUID. */
  async agentHistory(agentId: string): Promise<HistoryEntry[]> {
    return this.entries(`/v1/agents/${encodeURIComponent(agentId)}/history`);
  }

  private async entries(url: string): Promise<HistoryEntry[]> {
    const answer = await this.transport.json<History>({
      method: "GET",
      url,
      idempotent: true,
    });
    return answer.entries;
  }

  /** One page of the account's audit feed (decisions 6.3); `from` inclusive, `to` exclusive. */
  audit(
    options: { from?: string; to?: string; types?: string[]; cursor?: string; limit?: number } = {},
  ): Promise<AuditPage> {
    return this.transport.json<AuditPage>({
      method: "GET",
      url: "/v1/audit",
      idempotent: true,
      query: {
        from: options.from,
        to: options.to,
        type: options.types,
        cursor: options.cursor,
        limit: options.limit,
      },
    });
  }

  /** The account's compliance report for a month `YYYY-MM` (decisions 6.4). */
  complianceReport(month: string): Promise<ComplianceReport> {
    return this.transport.json<ComplianceReport>({
      method: "GET",
      url: "/v1/reports/compliance",
      idempotent: true,
      query: { month },
    });
  }

  /** The same report as CSV text (`metric,value` rows). */
  async complianceReportCsv(month: string): Promise<string> {
    const response = await this.transport.send({
      method: "GET",
      url: "/v1/reports/compliance",
      idempotent: true,
      query: { month },
      accept: "text/csv",
    });
    return response.text();
  }

  /** Agents this account may send to: its own first, then those of connected accounts (spec 4.6). */
  async sendable(): Promise<SendableAgent[]> {
    const answer = await this.transport.json<SendableAgentList>({
      method: "GET",
      url: "/v1/agents/sendable",
      idempotent: true,
    });
    return answer.agents;
  }

  // The account's own resources: what the `handoff` noun-verb commands manage (agents, transfers,
  // API keys, connections, whoami). They need no identity.

  /** The caller's account, its plan's limits and the credential in use (GET /v1/account). */
  whoami(): Promise<WhoAmI> {
    return this.transport.json<WhoAmI>({ method: "GET", url: "/v1/account", idempotent: true });
  }

  /** The account's agents, oldest first, disconnected ones included (spec 4.3). */
  async agents(): Promise<ListedAgent[]> {
    const answer = await this.transport.json<AgentList>({
      method: "GET",
      url: "/v1/agents",
      idempotent: true,
    });
    return answer.agents;
  }

  /** One agent of the account by its UUID, with its public keys (spec 4.4). */
  agent(id: string): Promise<AccountAgent> {
    return this.transport.json<AccountAgent>({ method: "GET", url: agentPath(id), idempotent: true });
  }

  /** Changes an agent's profile; only the fields given change, keys never (spec 4.5). */
  updateAgent(id: string, changes: AgentChanges): Promise<UpdatedAgent> {
    return this.transport.json<UpdatedAgent>({
      method: "PATCH",
      url: agentPath(id),
      idempotent: true,
      json: changes,
    });
  }

  /** Sends a webhook.test message to an agent's endpoint (decisions 8.2); answers its message id. */
  testWebhook(id: string): Promise<{ message_id: string }> {
    return this.transport.json<{ message_id: string }>({
      method: "POST",
      url: `${agentPath(id)}/webhook-test`,
      idempotent: false,
    });
  }

  /** A new webhook secret for an agent; the old one signs too for 24 hours (decisions 8.1). */
  rotateWebhookSecret(id: string): Promise<{ webhook_secret: string }> {
    return this.transport.json<{ webhook_secret: string }>({
      method: "POST",
      url: `${agentPath(id)}/webhook-secret`,
      idempotent: false,
    });
  }

  /** One page of an agent's webhook messages and their attempts, newest first (decisions 8.3). */
  webhookDeliveries(
    id: string,
    options: { cursor?: string; limit?: number } = {},
  ): Promise<WebhookDeliveryPage> {
    const query = new URLSearchParams();
    if (options.cursor) query.set("cursor", options.cursor);
    if (options.limit) query.set("limit", String(options.limit));
    const suffix = query.size > 0 ? `?${query}` : "";
    return this.transport.json<WebhookDeliveryPage>({
      method: "GET",
      url: `${agentPath(id)}/webhook-deliveries${suffix}`,
      idempotent: true,
    });
  }

  /** Disconnects an agent; its slug is free again (decisions 3.7). */
  deleteAgent(id: string): Promise<AccountAgent> {
    return this.transport.json<AccountAgent>({ method: "DELETE", url: agentPath(id), idempotent: true });
  }

  /** One page of the transfers the account sent or received, newest first (decisions 3.10). */
  transfers(
    options: {
      direction?: "sent" | "received";
      status?: TransferStatus;
      limit?: number;
      offset?: number;
    } = {},
  ): Promise<TransferPage> {
    return this.transport.json<TransferPage>({
      method: "GET",
      url: "/v1/transfers",
      idempotent: true,
      query: {
        direction: options.direction,
        status: options.status,
        limit: options.limit,
        offset: options.offset,
      },
    });
  }

  /** Deletes a transfer: its file data goes, its history stays (decisions 3.2). */
  deleteTransfer(transferId: string): Promise<{ id: string; status: "deleted" }> {
    return this.transport.json({
      method: "DELETE",
      url: `/v1/transfers/${encodeURIComponent(transferId)}`,
      idempotent: true,
    });
  }

  /** The account's API keys in use, oldest first (never the keys themselves). */
  async apiKeys(): Promise<ApiKeyInfo[]> {
    const answer = await this.transport.json<ApiKeyList>({
      method: "GET",
      url: "/v1/api-keys",
      idempotent: true,
    });
    return answer.api_keys;
  }

  /** A new API key on the caller's account; its secret is in this answer only (spec 4.15). */
  createApiKey(name: string): Promise<IssuedApiKey> {
    return this.transport.json<IssuedApiKey>({
      method: "POST",
      url: "/v1/api-keys",
      idempotent: true,
      json: { name },
    });
  }

  /** Revokes one of the account's API keys: its next use answers 401 (spec 4.15). */
  revokeApiKey(accountId: string, keyId: string): Promise<RevokedApiKey> {
    return this.transport.json<RevokedApiKey>({
      method: "DELETE",
      url: `/v1/accounts/${encodeURIComponent(accountId)}/api-keys/${encodeURIComponent(keyId)}`,
      idempotent: true,
    });
  }

  /**
   * A request link to `options.agent` (default: this client's identity's agent, else the account's
   * first): anyone holding it may send that agent files, encrypted to its key (decisions 10.1).
   * The answer's `token` and `url` are shown this once.
   */
  createRequest(options: RequestOptions): Promise<IssuedRequestLink> {
    return this.transport.json<IssuedRequestLink>({
      method: "POST",
      url: "/v1/requests",
      idempotent: true,
      json: {
        title: options.title,
        message: options.message,
        agent: options.agent,
        max_files: options.maxFiles,
        max_total_size: options.maxTotalSize,
        expires_in: options.expiresIn,
        max_uses: options.maxUses,
        ask_sender_name: options.askSenderName,
        ask_sender_email: options.askSenderEmail,
      },
    });
  }

  /** The account's request links, newest first (never their tokens). */
  async listRequests(): Promise<RequestLink[]> {
    const answer = await this.transport.json<RequestLinkList>({
      method: "GET",
      url: "/v1/requests",
      idempotent: true,
    });
    return answer.requests;
  }

  /** Revokes a request link: it answers 410 REQUEST_CLOSED from now on. */
  revokeRequest(id: string): Promise<RequestLink> {
    return this.transport.json<RequestLink>({
      method: "DELETE",
      url: `/v1/requests/${encodeURIComponent(id)}`,
      idempotent: true,
    });
  }

  /**
   * Answers someone's request link: the files go encrypted to the agent the link names, once the
   * transparency log proves its key (HandoffCustodyError otherwise), with the link's token alone
   * (no API key is sent to the link's service). See request-send.ts.
   */
  sendToRequest(options: RequestSendOptions): Promise<ConfirmedRequestTransfer> {
    return sendToRequest(this.transport, options, this.logOf(options.link));
  }

  /**
   * The log view that checks a link's key: this client's own (its pinned key and newest checkpoint)
   * for a link of its service; for another service's link, a view of that service's log pinned for
   * this one send, since holding checkpoints to earlier ones takes consistency proofs, which need an
   * account there (decisions 9.3).
   */
  private logOf(link: string): LogWitness {
    const { baseUrl } = parseRequestLink(link);
    return baseUrl === this.transport.baseUrl ? this.log : new LogWitness(this.transport, null, baseUrl);
  }

  /** Invites another account, by e-mail or UUID, to connect (decisions 3.18). */
  inviteConnection(account: string): Promise<Connection> {
    return this.transport.json<Connection>({
      method: "POST",
      url: "/v1/connections",
      idempotent: true,
      json: { account },
    });
  }

  /** Accepts or declines an invitation this account received. */
  answerConnection(id: string, answer: "accept" | "decline"): Promise<Connection> {
    return this.transport.json<Connection>({
      method: "POST",
      url: `/v1/connections/${encodeURIComponent(id)}/${answer}`,
      idempotent: true,
    });
  }

  /** Ends a connection, from either side. */
  removeConnection(id: string): Promise<Connection> {
    return this.transport.json<Connection>({
      method: "DELETE",
      url: `/v1/connections/${encodeURIComponent(id)}`,
      idempotent: true,
    });
  }
}

/** What a new request link asks for (decisions 10.1); the plan's defaults fill the rest. */
export interface RequestOptions {
  title: string;
  message?: string;
  /** The receiving agent's slug. */
  agent?: string;
  maxFiles?: number;
  /** Bytes as uploaded (encrypted). */
  maxTotalSize?: number;
  /** `1h`, `12h`, `24h`, `7d`, `14d`, `30d` or `90d`. */
  expiresIn?: string;
  maxUses?: number;
  askSenderName?: boolean;
  askSenderEmail?: boolean;
}

const agentPath = (id: string) => `/v1/agents/${encodeURIComponent(id)}`;
