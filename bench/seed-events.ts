/**
 * The service's own events for one transfer's life, made in memory so that a benchmark can seed a
 * log of hundreds of thousands of events through the event store in seconds rather than through
 * the API in the better part of an hour (bench/audit.ts, bench/transparency.ts), or millions
 * straight into the events table (bench/rebuild.ts).
 */
import { randomBytes, randomUUID } from "node:crypto";
import type { Knex } from "knex";
import { METADATA_VERSION } from "../domain/recorded-event.js";
import {
  ANY,
  type EventStore,
  type EventToAppend,
  NO_STREAM,
  type StreamAppend,
} from "../src/eventstore/port.js";

const metadata = (accountId: string, at: string) => ({
  schemaVersion: METADATA_VERSION,
  occurredAt: at,
  actorKind: "api_key" as const,
  accountId,
  keyId: null,
  agentId: null,
  requestId: null,
});

const event = (
  type: string,
  data: Record<string, unknown>,
  accountId: string,
  at: string,
): EventToAppend => ({
  eventId: randomUUID(),
  type,
  data,
  metadata: metadata(accountId, at),
});

/** One transfer's life on the account: created, counted, downloaded once, downloaded out. */
export function transferLife(
  accountId: string,
  sender: string,
  recipient: string,
  at: string,
): StreamAppend[] {
  const transferId = `tr_${randomBytes(18).toString("base64url").replace(/[-_]/g, "").slice(0, 24).padEnd(24, "x")}`;
  const files = [
    { fileId: randomUUID(), name: "bench.txt", size: 1024, type: "text/plain", encryptionIv: null },
  ];
  const created = {
    transferId,
    status: "active",
    pendingReason: null,
    atRest: null,
    mode: "agent-to-agent",
    sender: "bench-sender",
    senderPersonId: null,
    senderAccountId: accountId,
    senderAgentId: sender,
    recipient: "bench-recipient",
    recipientPersonId: null,
    recipientAccountId: accountId,
    recipientAgentId: recipient,
    maxDownloads: 1,
    autoDelete: false,
    isEncrypted: false,
    message: null,
    metadata: {},
    expiresAt: "2099-01-01T00:00:00.000Z",
    files,
    encryption: {
      encryptedKey: null,
      algorithm: null,
      senderSignature: null,
      recipientKeyVersion: null,
      senderPublicKey: null,
      recipientPublicKey: null,
    },
    createdAt: at,
  };
  return [
    {
      streamId: `transfer-${transferId}`,
      expected: NO_STREAM,
      events: [
        event("TransferCreated", created, accountId, at),
        event("DownloadRecorded", { downloads: 1, downloaderAgentId: recipient, at }, accountId, at),
        event("TransferDownloaded", { at, purgeAfter: null }, accountId, at),
      ],
    },
    {
      streamId: `usage-${accountId}`,
      expected: ANY,
      events: [event("TransferCounted", { transferId, period: at.slice(0, 7), bytes: 1024 }, accountId, at)],
    },
  ];
}

/** Transfers appended per transaction while seeding. */
const SEED_BATCH = 500;

/**
 * Appends `transfers` transfer lives (four events each, one second apart from 2026-11-01) of one
 * account's two agents, SEED_BATCH transfers per atomic append; prints how long it took.
 */
export async function seedTransfers(
  store: EventStore,
  transfers: number,
  parties: { accountId: string; sender: string; recipient: string },
): Promise<number> {
  const started = Date.now();
  for (let done = 0; done < transfers; done += SEED_BATCH) {
    const appends: StreamAppend[] = [];
    for (let i = done; i < Math.min(transfers, done + SEED_BATCH); i++) {
      const at = new Date(Date.UTC(2026, 10, 1) + i * 1000).toISOString();
      appends.push(...transferLife(parties.accountId, parties.sender, parties.recipient, at));
    }
    await store.appendMany(appends);
  }
  console.log(
    `  seeded ${transfers * 4} events (${transfers} transfers) in ${((Date.now() - started) / 1000).toFixed(1)} s`,
  );
  return transfers * 4;
}

/** Events inserted per statement (and transaction) by seedTransfersInBulk. */
const BULK_EVENTS = 20_000;

/**
 * Appends `transfers` more transfer lives as seedTransfers makes them, straight into the events
 * table, BULK_EVENTS a statement (one insert from a JSON array of the rows, which PostgreSQL
 * parses faster than as many array parameters): millions of events in minutes where the event
 * store's checked appends would take far longer. A log to read (a rebuild, a replay), not to
 * append to: `event_streams` is not kept, and the quota stream's revisions go on from
 * `firstTransfer` (the transfers seeded before). Returns the events inserted.
 */
export async function seedTransfersInBulk(
  db: Knex,
  firstTransfer: number,
  transfers: number,
  parties: { accountId: string; sender: string; recipient: string },
): Promise<number> {
  const perTransfer = 4;
  const chunk = BULK_EVENTS / perTransfer;
  const end = firstTransfer + transfers;
  for (let done = firstTransfer; done < end; done += chunk) {
    const rows = [];
    for (let i = done; i < Math.min(end, done + chunk); i++) {
      const at = new Date(Date.UTC(2026, 10, 1) + i * 1000).toISOString();
      for (const append of transferLife(parties.accountId, parties.sender, parties.recipient, at)) {
        const quota = append.streamId.startsWith("usage-");
        for (const [n, event] of append.events.entries()) {
          const { eventId: id, type, data, metadata } = event;
          rows.push({ id, stream: append.streamId, revision: quota ? i : n, type, data, metadata });
        }
      }
    }
    await db.raw(
      `insert into events (event_id, stream_id, revision, type, data, metadata)
       select id, stream, revision, type, data, metadata from jsonb_to_recordset(?::jsonb)
         as e(id uuid, stream text, revision bigint, type text, data jsonb, metadata jsonb)`,
      [JSON.stringify(rows)],
    );
  }
  return transfers * perTransfer;
}
