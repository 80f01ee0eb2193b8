import { createHash } from "node:crypto";
import type { Knex } from "knex";
import type { AgentEvent } from "../../../domain/agent.js";
import { type BroadcastEvent, URGENT_SEVERITIES } from "../../../domain/broadcast.js";
import { idOf } from "../../../domain/streams.js";
import type { TransferEvent } from "../../../domain/transfer.js";
import type { WebhookMessageType } from "../../../domain/webhook.js";
import type { Clock } from "../../clock.js";
import { enqueueMessages, type NewWebhookMessage } from "../../db/webhook-messages.js";
import type { RecordedEvent } from "../../eventstore/port.js";
import { presentTransfer } from "../../queries/transfer-view.js";
import type { TransferRow } from "../../queries/transfers.js";

export interface WebhookMessagesDeps {
  db: Knex;
  clock: Clock;
  publicBaseUrl: string;
  /** Resolves once the read models have applied `position` (the messages read them). */
  readModelsAt(position: string): Promise<void>;
  /** Whether any agent has a live webhook now, as the read models show it (cheap: remembered). */
  anyLiveWebhook(): Promise<boolean>;
  /** Told when messages were stored, so this instance's dispatcher looks at once. */
  enqueued(): void;
}

interface AgentRow {
  id: string;
  account_id: string;
  agent_id: string;
  webhook_status: string | null;
  webhook_url: string | null;
}

/** The rows a batch's messages are made from, read once for the whole batch. */
interface Rows {
  transfers: Map<string, TransferRow>;
  agents: Map<string, AgentRow>;
}

const TRANSFER_EVENTS = new Set([
  "TransferCreated",
  "DownloadRecorded",
  "TransferExpired",
  "ReceiptRecorded",
]);

async function rowsFor(db: Knex, events: RecordedEvent[]): Promise<Rows> {
  const transferIds = [
    ...new Set(events.filter((e) => TRANSFER_EVENTS.has(e.type)).map((e) => idOf(e.streamId))),
  ];
  const transfers: TransferRow[] =
    transferIds.length === 0 ? [] : await db("transfers").whereIn("id", transferIds);
  const agentIds = new Set<string>();
  for (const row of transfers)
    for (const id of [row.sender_agent_id, row.recipient_agent_id]) if (id) agentIds.add(id);
  for (const e of events) {
    if (e.type === "BroadcastPublished")
      for (const id of (e.data.agentIds as string[]) ?? []) agentIds.add(id);
    if (e.type === "WebhookTestRequested") agentIds.add(idOf(e.streamId));
    if (e.type === "DownloadRecorded" && typeof e.data.downloaderAgentId === "string")
      agentIds.add(e.data.downloaderAgentId);
  }
  const agents: AgentRow[] =
    agentIds.size === 0
      ? []
      : await db("agents")
          .whereIn("id", [...agentIds])
          .select("id", "account_id", "agent_id", "webhook_status", "webhook_url");
  return {
    transfers: new Map(transfers.map((row) => [row.id, row])),
    agents: new Map(agents.map((row) => [row.id, row])),
  };
}

/** The agents among `ids` whose webhook is live, in the order asked for. */
function withWebhooks(rows: Rows, ids: (string | null)[]): AgentRow[] {
  return ids.flatMap((id) => {
    const agent = id ? rows.agents.get(id) : undefined;
    return agent && agent.webhook_status === "active" && agent.webhook_url ? [agent] : [];
  });
}

const dataOf = <Data>(recorded: RecordedEvent) => recorded.data as unknown as Data;

/** A message's id: from the event and its agent, so the same event always makes the same message. */
const messageIdOf = (eventId: string, agentId: string) =>
  `msg_${createHash("sha256").update(`${eventId}:${agentId}`).digest("hex").slice(0, 32)}`;

type Made = {
  type: WebhookMessageType;
  agentIds: (string | null)[];
  data: (agent: AgentRow) => Record<string, unknown>;
  messageId?: string;
};

/** What an event says to whom (decisions 8.2), or null when it says nothing to a webhook. */
function messagesOf(deps: WebhookMessagesDeps, rows: Rows, recorded: RecordedEvent): Made | null {
  const id = idOf(recorded.streamId);
  switch (recorded.type) {
    case "TransferCreated": {
      const created = dataOf<Extract<TransferEvent, { type: "TransferCreated" }>["data"]>(recorded);
      if (!created.recipientAgentId) return null;
      const row = rows.transfers.get(id);
      if (!row) return null;
      // Sender and recipient stay sealed as the read model holds them; opened when sent.
      const item = presentTransfer(row, deps.publicBaseUrl, new Date(recorded.metadata.occurredAt));
      return { type: "transfer.received", agentIds: [created.recipientAgentId], data: () => item };
    }
    case "DownloadRecorded": {
      const data = dataOf<Extract<TransferEvent, { type: "DownloadRecorded" }>["data"]>(recorded);
      const row = rows.transfers.get(id);
      if (!row) return null;
      const downloader = data.downloaderAgentId ? rows.agents.get(data.downloaderAgentId) : undefined;
      return {
        type: "transfer.downloaded",
        agentIds: [row.sender_agent_id],
        data: () => ({
          transfer_id: id,
          downloads: data.downloads,
          max_downloads: row.max_downloads,
          downloaded_by: downloader?.agent_id ?? null,
        }),
      };
    }
    case "TransferExpired": {
      const data = dataOf<Extract<TransferEvent, { type: "TransferExpired" }>["data"]>(recorded);
      const row = rows.transfers.get(id);
      if (!row) return null;
      return {
        type: "transfer.expired",
        agentIds: [row.sender_agent_id],
        data: () => ({ transfer_id: id, expired_at: data.at }),
      };
    }
    case "ReceiptRecorded": {
      // Decisions 9.5: the sender hears of the recipient's signed receipt, as it was posted.
      const data = dataOf<Extract<TransferEvent, { type: "ReceiptRecorded" }>["data"]>(recorded);
      const row = rows.transfers.get(id);
      if (!row) return null;
      return {
        type: "transfer.receipt",
        agentIds: [row.sender_agent_id],
        data: () => ({
          transfer_id: id,
          receipt: data.receipt,
          signature: data.signature,
          position: recorded.position,
        }),
      };
    }
    case "BroadcastPublished": {
      const b = dataOf<Extract<BroadcastEvent, { type: "BroadcastPublished" }>["data"]>(recorded);
      // Decisions 8.2: the content travels only when the broadcast is urgent (as 4.8 shows it).
      const urgent = URGENT_SEVERITIES.includes(b.severity);
      const broadcast = {
        id: b.broadcastId,
        title: b.title,
        ...(urgent ? { content: b.content } : {}),
        severity: b.severity,
        affected_components: b.affectedComponents,
        agent_count: b.agentIds.length,
        created_at: b.publishedAt,
      };
      return { type: "broadcast.published", agentIds: b.agentIds, data: () => broadcast };
    }
    case "WebhookTestRequested": {
      const data = dataOf<Extract<AgentEvent, { type: "WebhookTestRequested" }>["data"]>(recorded);
      return {
        type: "webhook.test",
        agentIds: [id],
        messageId: data.messageId,
        data: (agent) => ({ agent_id: agent.agent_id, requested_at: data.requestedAt }),
      };
    }
    default:
      return null;
  }
}

/** The events a webhook message can come from (decisions 8.3). */
export const WEBHOOK_SOURCE_EVENTS: readonly string[] = [
  "TransferCreated",
  "DownloadRecorded",
  "TransferExpired",
  "ReceiptRecorded",
  "BroadcastPublished",
  "WebhookTestRequested",
];
const RELEVANT = new Set(WEBHOOK_SOURCE_EVENTS);
/** The events that can give an agent a live webhook (a `webhook_url` set at registration or later). */
const MAY_ENABLE_A_WEBHOOK = ["AgentRegistered", "AgentUpdated"];
/** What the webhook reactor reads: the events messages come from, and those that can enable a webhook. */
export const WEBHOOK_REACTOR_EVENTS: readonly string[] = [...WEBHOOK_SOURCE_EVENTS, ...MAY_ENABLE_A_WEBHOOK];

/**
 * The webhook reactor's step (decisions 8.3): turns a batch of events into their messages, stored
 * in the delivery queue in log order. A message exists because an event does: the reactor's
 * checkpoint moves only after they are stored, and replaying an event stores nothing new. The
 * rows the messages need are read once per batch, after the read models have reached its end.
 *
 * While no agent has a live webhook, a batch makes no message, and its wait for the read models
 * is skipped: every transfer would otherwise hurry them to its event (ProjectionEngine). That
 * needs the read models to show every event that can enable a webhook up to the batch's end. The
 * reactor reads those events too, and after one it waits again until the read models have shown
 * it: with none since, read models that show no live webhook are right for the whole batch.
 */
export function webhookMessages(deps: WebhookMessagesDeps) {
  /** The read models have shown every event read so far that can enable a webhook. */
  let enablingShown = false;
  return async (batch: RecordedEvent[]): Promise<boolean> => {
    if (batch.some((recorded) => MAY_ENABLE_A_WEBHOOK.includes(recorded.type))) enablingShown = false;
    const relevant = batch.filter((recorded) => RELEVANT.has(recorded.type));
    const end = batch.at(-1);
    if (!end || relevant.length === 0) return false;
    if (enablingShown && !(await deps.anyLiveWebhook())) return false;
    // The batch's end, not its last message's source: an event after that may have enabled one.
    await deps.readModelsAt(end.position);
    enablingShown = true;
    if (!(await deps.anyLiveWebhook())) return false;
    const rows = await rowsFor(deps.db, relevant);
    const messages = relevant.flatMap((recorded): NewWebhookMessage[] => {
      const made = messagesOf(deps, rows, recorded);
      if (!made) return [];
      return withWebhooks(rows, made.agentIds).map((agent) => ({
        messageId: made.messageId ?? messageIdOf(recorded.eventId, agent.id),
        agentId: agent.id,
        accountId: agent.account_id,
        type: made.type,
        occurredAt: recorded.metadata.occurredAt,
        data: made.data(agent),
      }));
    });
    const stored = await enqueueMessages(deps.db, messages, deps.clock.now());
    if (stored > 0) deps.enqueued();
    return stored > 0;
  };
}
