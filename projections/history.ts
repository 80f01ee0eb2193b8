import type { Knex } from "knex";
import type { ErasureEvent } from "../domain/erasure.js";
import { ERASED, personalFields, publicJson } from "../domain/personal-data.js";
import type { ActorKind, RecordedEvent } from "../domain/recorded-event.js";
import { categoryOf, idOf, streams } from "../domain/streams.js";
import type { BatchRows, Projection } from "./projection.js";
import type { Inserted } from "./rows.js";
import { runTogether, type Statement } from "./statements.js";

/** The actor of a history entry: the event's metadata, without secrets. */
export interface HistoryActor {
  kind: ActorKind;
  account_id: string | null;
  agent_id: string | null;
  key_id: string | null;
}

export interface HistoryEntryRow {
  position: string;
  stream_id: string;
  type: string;
  at: Date;
  actor: HistoryActor;
  data: Record<string, unknown>;
}

export interface HistoryIndexRow {
  subject: string;
  position: string;
}

export interface HistoryStreamRow {
  stream_id: string;
  subjects: string[];
}

/**
 * History (decisions 6.1–6.3): one `history_entries` row per event that belongs to an account, an
 * agent or a transfer, its data without secrets (personal data stays sealed, opened when read),
 * and one `history_index` row per subject it belongs to (`account:<id>`, `agent:<id>`,
 * `transfer:<id>`), so a transfer's history, an agent's and an account's audit feed are each one
 * range of an index. A stream's later events name no parties, so the subjects of its first event
 * are kept in `history_streams`. Rows are written in bulk, a batch at a time: a rebuild is one
 * multi-row insert per thousand events rather than one statement per event.
 */
export const historyProjection: Projection = {
  name: "history",
  tables: ["history_entries", "history_index", "history_streams"],
  insertOnly: ["history_index"],
  apply: (trx, event) => applyHistory(trx, [event]),
  rowsOfBatch: (db, events, earlier) => historyRows(db, events, earlier as HistoryBatch | null),
  applyBatch: (trx, events, made) => applyHistory(trx, events, made as HistoryBatch | undefined),
};

type Subjects = string[];

const account = (id: unknown) => (typeof id === "string" ? [`account:${id}`] : []);
const agent = (id: unknown) => (typeof id === "string" ? [`agent:${id}`] : []);

/** The subjects a stream's first event gives every event of the stream, or null for none. */
function streamSubjects(event: RecordedEvent): Subjects | null {
  const id = idOf(event.streamId);
  const d = event.data;
  switch (event.type) {
    case "AccountCreated":
      return account(id);
    case "AgentRegistered":
      return [...account(d.accountId), ...agent(id)];
    case "ApiKeyCreated":
      return account(d.accountId);
    // Decisions 10.3: a link's creation, each use and its revocation are on its agent's history.
    case "RequestLinkCreated":
      return [...account(d.accountId), ...agent(d.agentId)];
    case "TransferCreated":
      return [
        `transfer:${id}`,
        ...account(d.senderAccountId),
        ...account(d.recipientAccountId),
        ...agent(d.senderAgentId),
        ...agent(d.recipientAgentId),
      ];
    case "ConnectionRequested":
      return [...account(d.requesterAccountId), ...account(d.inviteeAccountId)];
    default:
      return null;
  }
}

/** Subjects an event names by itself, beyond its stream's. */
function ownSubjects(event: RecordedEvent): Subjects {
  const d = event.data;
  const category = categoryOf(event.streamId);
  const byCategory =
    category === "usage" || category === "account"
      ? account(idOf(event.streamId))
      : category === "account_email"
        ? account(d.accountId)
        : category === "webhook"
          ? agent(idOf(event.streamId))
          : event.type === "DownloadRecorded"
            ? agent(d.downloaderAgentId)
            : event.type === "BroadcastRead"
              ? agent(d.agentId)
              : event.type === "PersonErased"
                ? [
                    ...(d as ErasureEvent["data"]).accountIds.flatMap(account),
                    ...(d as ErasureEvent["data"]).transferIds.map((t) => `transfer:${t}`),
                  ]
                : [];
  // An account always sees what it did itself.
  return [...byCategory, ...account(event.metadata.accountId)];
}

interface Pending {
  entries: Inserted<HistoryEntryRow>[];
  /** Each entry's subjects, in the order of `entries`: its `history_index` rows. */
  subjects: Subjects[];
  streams: HistoryStreamRow[];
}

const nothingPending = (): Pending => ({ entries: [], subjects: [], streams: [] });

/**
 * A batch made ready to write: its rows in runs, each run's inserts followed by the erasure (if
 * any) that must see them; and the subjects of the streams that begin in it, for the batch after
 * it, whose rows may be made before these are committed.
 */
interface HistoryBatch extends BatchRows {
  runs: { inserts: Statement[]; erasure: RecordedEvent | null }[];
  begun: Map<string, Subjects>;
}

const CHUNK = 1000;

async function applyHistory(trx: Knex.Transaction, events: RecordedEvent[], made?: HistoryBatch) {
  const batch = made?.events === events ? made : await historyRows(trx, events, null);
  for (const { inserts, erasure } of batch.runs) {
    await runTogether(trx, inserts);
    if (erasure) await redact(trx, erasure);
  }
}

/**
 * Makes a batch's rows. `db` must show the rows of every batch before `earlier` (the batch just
 * before this one, whose rows may still be on their way): the subjects of a stream that began
 * there come from it.
 */
async function historyRows(
  db: Knex | Knex.Transaction,
  events: RecordedEvent[],
  earlier: HistoryBatch | null,
): Promise<HistoryBatch> {
  const known = await knownStreams(db, events, earlier?.begun ?? new Map());
  const runs: HistoryBatch["runs"] = [];
  const begun = new Map<string, Subjects>();
  let pending = nothingPending();
  for (const event of events) {
    const first = streamSubjects(event);
    if (first && !known.has(event.streamId)) {
      known.set(event.streamId, first);
      begun.set(event.streamId, first);
      pending.streams.push({ stream_id: event.streamId, subjects: first });
    }
    const subjects = [...new Set([...(known.get(event.streamId) ?? []), ...ownSubjects(event)])];
    if (subjects.length > 0) {
      pending.entries.push({
        position: event.position,
        stream_id: event.streamId,
        type: event.type,
        at: event.metadata.occurredAt,
        actor: {
          kind: event.metadata.actorKind,
          account_id: event.metadata.accountId,
          agent_id: event.metadata.agentId,
          key_id: event.metadata.keyId,
        },
        // Its secrets are left out as the entries are written (insertsOf).
        data: event.data,
      });
      pending.subjects.push(subjects);
    }
    if (event.type === "PersonErased" || event.type === "AccountErased") {
      runs.push({ inserts: insertsOf(pending), erasure: event });
      pending = nothingPending();
    }
  }
  runs.push({ inserts: insertsOf(pending), erasure: null });
  return { events, runs, begun };
}

/**
 * Subjects remembered for the streams of this batch whose first event came in an earlier one: from
 * `begunBefore` for those that began in the batch just before, else looked up. A stream that begins
 * in the batch has nothing remembered yet: most of a rebuild's streams begin and end within one
 * batch, and are not looked for.
 */
async function knownStreams(
  db: Knex | Knex.Transaction,
  events: RecordedEvent[],
  begunBefore: Map<string, Subjects>,
): Promise<Map<string, Subjects>> {
  const begun = new Set(events.filter((e) => e.revision === 0).map((e) => e.streamId));
  const known = new Map<string, Subjects>();
  const later = new Set<string>();
  for (const { streamId } of events) {
    if (begun.has(streamId) || known.has(streamId)) continue;
    const subjects = begunBefore.get(streamId);
    if (subjects) known.set(streamId, subjects);
    else later.add(streamId);
  }
  const unknown = [...later];
  for (let i = 0; i < unknown.length; i += CHUNK) {
    const rows = await db("history_streams")
      .whereIn("stream_id", unknown.slice(i, i + CHUNK))
      .select<HistoryStreamRow[]>("stream_id", "subjects");
    for (const row of rows) known.set(row.stream_id, row.subjects);
  }
  return known;
}

/**
 * The inserts of pending rows, all three tables in one statement (runTogether), each column as one
 * array parameter (`unnest`): one short statement however many rows, where a multi-row VALUES list
 * would carry a parameter per field and cost more to parse and bind than to insert.
 */
function insertsOf(pending: Pending): Statement[] {
  const column = <T, K extends keyof T>(rows: T[], key: K): T[K][] => rows.map((row) => row[key]);
  const inserts: Statement[] = [];
  if (pending.streams.length > 0) {
    inserts.push({
      sql: "insert into history_streams (stream_id, subjects) select s, string_to_array(j, ' ') from unnest(?::text[], ?::text[]) as t(s, j)",
      bindings: [column(pending.streams, "stream_id"), pending.streams.map((row) => row.subjects.join(" "))],
    });
  }
  if (pending.entries.length > 0) {
    const positions = column(pending.entries, "position");
    // The JSON columns as one JSON array each, taken apart by the database without parsing them
    // twice (json_populate_recordset parsed the document, then every value again, and took twice
    // as long): their data is JSON already, and goes in without escaping.
    inserts.push({
      sql: `insert into history_entries (position, stream_id, type, at, actor, data)
        select * from rows from (unnest(?::text[], ?::text[], ?::text[], ?::timestamptz[]),
          json_array_elements(?::json), json_array_elements(?::json))`,
      bindings: [
        positions,
        column(pending.entries, "stream_id"),
        column(pending.entries, "type"),
        column(pending.entries, "at"),
        JSON.stringify(column(pending.entries, "actor")),
        publicJson(column(pending.entries, "data")),
      ],
    });
    // Each entry's subjects as one string: a third of the array elements to escape and parse.
    inserts.push({
      sql: `insert into history_index (subject, position)
        select unnest(string_to_array(j, ' ')), p from unnest(?::text[], ?::text[]) as t(p, j)`,
      bindings: [positions, pending.subjects.map((subjects) => subjects.join(" "))],
    });
  }
  return inserts;
}

/**
 * An erasure writes "[erased]" over the person's fields in the entries that held them: sealed
 * values would read as erased anyway once the key is gone, but values written in clear before
 * sealing existed would not, and a rebuilt row should say so in plain words too.
 */
async function redact(trx: Knex.Transaction, event: RecordedEvent): Promise<void> {
  const accountId = idOf(event.streamId);
  const targets =
    event.type === "AccountErased"
      ? [
          { streamId: streams.account(accountId), type: "AccountCreated" },
          { streamId: streams.human(accountId), type: "EmailVerificationRequested" },
        ]
      : (event.data as ErasureEvent["data"]).transferIds.map((id) => ({
          streamId: streams.transfer(id),
          type: "TransferCreated",
        }));
  for (const { streamId, type } of targets) {
    const rows = await trx("history_entries")
      .where({ stream_id: streamId, type })
      .select<{ position: string; data: Record<string, unknown> }[]>("position", "data");
    for (const row of rows) {
      const fields = personalFields(type, row.data);
      if (fields.length === 0) continue;
      const erased = Object.fromEntries(fields.map((field) => [field, ERASED]));
      await trx("history_entries")
        .where({ position: row.position })
        .update({ data: JSON.stringify({ ...row.data, ...erased }) });
    }
  }
}
