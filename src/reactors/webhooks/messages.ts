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
import { findTransfer } from "../../queries/transfers.js";

export interface WebhookMessagesDeps {
  db: Knex;
  clock: Clock;
  publicBaseUrl: string;
  /** Resolves once the read models have applied `position` (the messages read them). */
  readModelsAt(position: string): Promise<void>;
  /** Told when messages were stored, so this instance's dispatcher looks at once. */
  enqueued(): void;
}

interface Recipient {
  id: string;
  account_id: string;
  agent_id: string;
}

/** The agents among `ids` whose webhook is live, in the order asked for. */
async function withWebhooks(db: Knex, ids: (string | null)[]): Promise<Recipient[]> {
  const wanted = ids.filter((id): id is string => id !== null);
  if (wanted.length === 0) return [];
  const rows: Recipient[] = await db("agents")
    .whereIn("id", wanted)
    .where({ webhook_status: "active" })
    .whereNotNull("webhook_url")
    .select("id", "account_id", "agent_id");
  const byId = new Map(rows.map((row) => [row.id, row]));
  return wanted.flatMap((id) => byId.get(id) ?? []);
}

const dataOf = <Data>(recorded: RecordedEvent) => recorded.data as unknown as Data;

/** A message's id: from the event and its agent, so the same event always makes the same message. */
const messageIdOf = (eventId: string, agentId: string) =>
  `msg_${createHash("sha256").update(`${eventId}:${agentId}`).digest("hex").slice(0, 32)}`;

type Made = {
  type: WebhookMessageType;
  agentIds: (string | null)[];
  data: (agent: Recipient) => Record<string, unknown>;
  messageId?: string;
};

/** What an event says to whom (decisions 8.2), or null when it says nothing to a webhook. */
async function messagesOf(deps: WebhookMessagesDeps, recorded: RecordedEvent): Promise<Made | null> {
  const id = idOf(recorded.streamId);
  switch (recorded.type) {
    case "TransferCreated": {
      const created = dataOf<Extract<TransferEvent, { type: "TransferCreated" }>["data"]>(recorded);
      if (!created.recipientAgentId) return null;
      const row = await findTransfer(deps.db, id);
      if (!row) return null;
      // Sender and recipient stay sealed as the read model holds them; opened when sent.
      const item = presentTransfer(row, deps.publicBaseUrl, new Date(recorded.metadata.occurredAt));
      return { type: "transfer.received", agentIds: [created.recipientAgentId], data: () => item };
    }
    case "DownloadRecorded": {
      const data = dataOf<Extract<TransferEvent, { type: "DownloadRecorded" }>["data"]>(recorded);
      const row = await findTransfer(deps.db, id);
      if (!row) return null;
      const downloader = data.downloaderAgentId
        ? await deps
            .db("agents")
            .where({ id: data.downloaderAgentId })
            .first<{ agent_id: string } | undefined>("agent_id")
        : undefined;
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
      const row = await findTransfer(deps.db, id);
      if (!row) return null;
      return {
        type: "transfer.expired",
        agentIds: [row.sender_agent_id],
        data: () => ({ transfer_id: id, expired_at: data.at }),
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

const RELEVANT = new Set([
  "TransferCreated",
  "DownloadRecorded",
  "TransferExpired",
  "BroadcastPublished",
  "WebhookTestRequested",
]);

/**
 * The webhook reactor's step (decisions 8.3): turns an event into its messages, stored in the
 * delivery queue. A message exists because an event does: the reactor's checkpoint moves only
 * after they are stored, and replaying an event stores nothing new.
 */
export function webhookMessages(deps: WebhookMessagesDeps) {
  return async (recorded: RecordedEvent): Promise<boolean> => {
    if (!RELEVANT.has(recorded.type)) return false;
    await deps.readModelsAt(recorded.position);
    const made = await messagesOf(deps, recorded);
    if (!made) return false;
    const recipients = await withWebhooks(deps.db, made.agentIds);
    const messages: NewWebhookMessage[] = recipients.map((agent) => ({
      messageId: made.messageId ?? messageIdOf(recorded.eventId, agent.id),
      agentId: agent.id,
      accountId: agent.account_id,
      type: made.type,
      occurredAt: recorded.metadata.occurredAt,
      data: made.data(agent),
    }));
    const stored = await enqueueMessages(deps.db, messages, deps.clock.now());
    if (stored > 0) deps.enqueued();
    return stored > 0;
  };
}
