import type { Knex } from "knex";
import type { ErasureEvent } from "../domain/erasure.js";
import { ERASED } from "../domain/personal-data.js";
import type { RecordedEvent } from "../domain/recorded-event.js";
import { categoryOf, idOf } from "../domain/streams.js";
import {
  type TransferEncryption,
  type TransferEvent,
  type TransferFile,
  type TransferMode,
  type TransferRecord,
  type TransferStatus,
  withWrappedKey,
} from "../domain/transfer.js";
import type { Projection } from "./projection.js";
import type { Changed, Inserted } from "./rows.js";
import { runTogether, type Statement } from "./statements.js";

export interface TransferRow {
  id: string;
  mode: TransferMode;
  sender: string;
  sender_account_id: string;
  sender_agent_id: string | null;
  sender_person_id: string | null;
  /** Mode `request`: the e-mail address the sender typed, sealed (decisions 6.5); else null. */
  sender_email: string | null;
  /** Mode `request`: the request link it came through. */
  request_id: string | null;
  recipient: string;
  recipient_person_id: string | null;
  recipient_account_id: string | null;
  recipient_agent_id: string | null;
  /** As recorded: the status a reader sees at a time is statusAt's (domain/transfer.ts). */
  status: TransferStatus;
  pending_reason: string | null;
  files: TransferFile[];
  file_count: number;
  total_size: number;
  max_downloads: number;
  downloads: number;
  auto_delete: boolean;
  is_encrypted: boolean;
  message: string | null;
  metadata: Record<string, unknown>;
  encryption: TransferEncryption;
  created_at: Date;
  expires_at: Date;
  /** The log position of its creation: orders the list. */
  created_position: string;
  /** That of its creation, then of its activation: orders the inbox and makes its cursor. */
  inbox_position: string;
  files_deleted: boolean;
  purge_after: Date | null;
}

/**
 * One row per transfer: the list, get, inbox and housekeeping all read it. `created_position`
 * (the log position of its creation) orders the list; `inbox_position` (that of its creation, then
 * of its activation) orders the inbox and makes its cursor, so a presigned transfer shown while
 * pending comes round again once active. Both come from the log: identical on rebuild.
 *
 * A batch is applied as a whole: rows of transfers created in it are folded in memory and inserted
 * together, and the changes to older rows are merged into one update per row, so a rebuild costs a
 * few statements per thousand events rather than one per event.
 */
export const transfersProjection: Projection = {
  name: "transfers",
  tables: ["transfers"],
  apply: (trx, event) => applyTransfers(trx, [event]),
  applyBatch: applyTransfers,
};

type Created = Extract<TransferEvent, { type: "TransferCreated" }>["data"];

function rowOf(id: string, d: Created, position: string): Inserted<TransferRow> {
  return {
    id,
    mode: d.mode,
    sender: d.sender,
    sender_account_id: d.senderAccountId,
    sender_agent_id: d.senderAgentId,
    recipient: d.recipient,
    recipient_person_id: d.recipientPersonId,
    sender_person_id: d.senderPersonId,
    sender_email: d.senderEmail ?? null,
    request_id: d.requestId ?? null,
    recipient_account_id: d.recipientAccountId,
    recipient_agent_id: d.recipientAgentId,
    status: d.status,
    pending_reason: d.pendingReason ?? null,
    files: d.files,
    file_count: d.files.length,
    total_size: d.files.reduce((sum, file) => sum + file.size, 0),
    max_downloads: d.maxDownloads,
    downloads: 0,
    auto_delete: d.autoDelete,
    is_encrypted: d.isEncrypted,
    message: d.message,
    metadata: d.metadata,
    encryption: d.encryption,
    created_at: d.createdAt,
    expires_at: d.expiresAt,
    created_position: position,
    inbox_position: position,
    files_deleted: false,
    purge_after: null,
  };
}

/** The columns an event changes on its transfer's row; `current` gives the row's files and keys. */
async function changeOf(
  event: Exclude<TransferEvent, { type: "TransferCreated" }>,
  position: string,
  current: () => Promise<Pick<TransferRecord, "files" | "encryption">>,
): Promise<Changed<TransferRow>> {
  switch (event.type) {
    case "TransferActivated":
      return { status: "active", inbox_position: position };
    case "ContentKeyWrapped": {
      const record = withWrappedKey((await current()) as TransferRecord, event.data);
      return {
        recipient_account_id: record.recipientAccountId,
        pending_reason: null,
        is_encrypted: true,
        files: record.files,
        encryption: record.encryption,
      };
    }
    case "DownloadRecorded":
      return { downloads: event.data.downloads };
    case "TransferDownloaded":
      return { status: "downloaded", purge_after: event.data.purgeAfter };
    case "TransferExpired":
      return { status: "expired", purge_after: event.data.at };
    case "TransferDeleted":
      return { status: "deleted", purge_after: event.data.at };
    case "TransferFilesDeleted":
      return { files_deleted: true };
    default:
      return {};
  }
}

/**
 * The changes to older rows, one update per set of changed columns: each change is a row of a JSON
 * recordset joined to its transfer by id (a download changes `downloads` alone, so a batch of
 * downloads is one update however many rows it touches). Each transfer is in one of them.
 */
function rowUpdates(changed: Map<string, Changed<TransferRow>>): Statement[] {
  const byColumns = new Map<string, Changed<TransferRow>[]>();
  for (const [id, change] of changed) {
    const columns = Object.keys(change).sort().join(",");
    const rows = byColumns.get(columns) ?? [];
    rows.push({ ...change, id });
    byColumns.set(columns, rows);
  }
  return [...byColumns].map(([columns, rows]) => {
    const names = columns.split(",");
    return {
      sql: `update transfers as t set ${names.map(() => "?? = s.??").join(", ")}
         from jsonb_populate_recordset(null::transfers, ?::jsonb) as s where t.id = s.id`,
      bindings: [...names.flatMap((name) => [name, name]), JSON.stringify(rows)],
    };
  });
}

async function applyTransfers(trx: Knex.Transaction, events: RecordedEvent[]): Promise<void> {
  const created = new Map<string, Inserted<TransferRow>>();
  const changed = new Map<string, Changed<TransferRow>>();
  // New rows and changes to older ones touch different rows: one statement for all of them.
  const flush = async () => {
    const statements = rowUpdates(changed);
    if (created.size > 0) {
      // Every new row with one parameter, however many there are.
      statements.push({
        sql: "insert into transfers select * from jsonb_populate_recordset(null::transfers, ?::jsonb)",
        bindings: [JSON.stringify([...created.values()])],
      });
    }
    await runTogether(trx, statements);
    created.clear();
    changed.clear();
  };
  for (const recorded of events) {
    if (recorded.type === "PersonErased") {
      await flush();
      await erase(trx, recorded.data as ErasureEvent["data"]);
      continue;
    }
    if (categoryOf(recorded.streamId) !== "transfer") continue;
    const id = idOf(recorded.streamId);
    const event = { type: recorded.type, data: recorded.data } as TransferEvent;
    if (event.type === "TransferCreated") {
      created.set(id, rowOf(id, event.data, recorded.position));
      continue;
    }
    const pending = created.get(id);
    const change = await changeOf(event, recorded.position, async () => {
      if (pending) return pending as unknown as Pick<TransferRecord, "files" | "encryption">;
      await flush();
      return trx("transfers").where({ id }).first("files", "encryption");
    });
    // An event that changes no column (a receipt, a destroyed held key) writes nothing.
    if (Object.keys(change).length === 0) continue;
    if (pending) Object.assign(pending, change);
    else changed.set(id, { ...changed.get(id), ...change });
  }
  await flush();
}

/**
 * Each mode names one person: the recipient of agent-to-human, the sender of human-to-agent and of
 * a request (name and address).
 */
async function erase(trx: Knex.Transaction, { transferIds }: ErasureEvent["data"]): Promise<void> {
  if (transferIds.length === 0) return;
  await trx("transfers")
    .whereIn("id", transferIds)
    .where({ mode: "agent-to-human" })
    .update({ recipient: ERASED });
  await trx("transfers")
    .whereIn("id", transferIds)
    .where({ mode: "human-to-agent" })
    .update({ sender: ERASED });
  await trx("transfers")
    .whereIn("id", transferIds)
    .where({ mode: "request" })
    .update({ sender: ERASED, sender_email: ERASED });
}
