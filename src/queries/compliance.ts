import type { Knex } from "knex";
/** Decisions 6.4: one account's month, as the log stood at `head_position`; the contract names its shape. */
import type { ComplianceReport } from "../contract/history.js";
import { type HistoryRow, historyOf, transferCreations } from "./history.js";

/** `YYYY-MM` → the month's first instant and the next month's, in UTC. */
export function monthRange(month: string): { from: string; to: string } {
  const [year = 0, number = 0] = month.split("-").map(Number);
  return {
    from: new Date(Date.UTC(year, number - 1, 1)).toISOString(),
    to: new Date(Date.UTC(year, number, 1)).toISOString(),
  };
}

/**
 * The head a report is computed at: the newest history entry the read model holds, so that two
 * reports at one head are the same bytes, and `generated_at` is the log's own time there, not the
 * clock's.
 */
export async function reportHead(db: Knex): Promise<{ position: string; at: string } | null> {
  const row = await db("history_entries")
    .orderBy("position", "desc")
    .first<{ position: string; at: Date | string } | undefined>("position", "at");
  return row ? { position: row.position, at: new Date(row.at).toISOString() } : null;
}

interface Created {
  senderAccountId: string;
  recipientAccountId: string | null;
  senderAgentId: string | null;
  recipientAgentId: string | null;
  files: { size: number }[];
}

/**
 * Replays the account's history entries of the month up to the head and counts. Transfers are
 * those the account takes part in, sent or received; bytes are those it uploaded (sent).
 */
export async function complianceReport(
  db: Knex,
  accountId: string,
  month: string,
  head: { position: string; at: string } | null,
): Promise<ComplianceReport> {
  const report: ComplianceReport = {
    account_id: accountId,
    month,
    generated_at: head?.at ?? null,
    head_position: head?.position ?? null,
    transfers: { created: 0, downloaded: 0, expired: 0, deleted: 0, bytes_uploaded: 0, downloads: 0 },
    by_agent: [],
    api_keys: { created: 0, revoked: 0 },
    connections: { requested: 0, accepted: 0, declined: 0, revoked: 0 },
    erasures: 0,
  };
  if (!head) return report;
  const rows = await historyOf(db, `account:${accountId}`, { ...monthRange(month), until: head.position });
  const creations = await transferCreations(db, [
    ...new Set(rows.filter((row) => row.stream_id.startsWith("transfer-")).map((row) => row.stream_id)),
  ]);
  const agents = new Map<string, ComplianceReport["by_agent"][number]>();
  const agentRow = (id: string) => {
    const existing = agents.get(id);
    if (existing) return existing;
    const fresh = { agent_id: id, sent: 0, received: 0, downloads: 0, bytes_uploaded: 0 };
    agents.set(id, fresh);
    return fresh;
  };
  const t = report.transfers;
  for (const row of rows) {
    const created = creations.get(row.stream_id)?.data as Created | undefined;
    count(row, created);
  }
  report.by_agent = [...agents.values()].sort((a, b) => (a.agent_id < b.agent_id ? -1 : 1));
  return report;

  function count(row: HistoryRow, created: Created | undefined) {
    switch (row.type) {
      case "TransferCreated": {
        const d = row.data as unknown as Created;
        const bytes = d.files.reduce((sum, file) => sum + file.size, 0);
        t.created++;
        if (d.senderAccountId === accountId) {
          t.bytes_uploaded += bytes;
          if (d.senderAgentId) {
            agentRow(d.senderAgentId).sent++;
            agentRow(d.senderAgentId).bytes_uploaded += bytes;
          }
        }
        if (d.recipientAccountId === accountId && d.recipientAgentId) agentRow(d.recipientAgentId).received++;
        return;
      }
      case "DownloadRecorded": {
        t.downloads++;
        const by = row.data.downloaderAgentId;
        if (typeof by === "string" && created?.recipientAccountId === accountId) agentRow(by).downloads++;
        return;
      }
      case "TransferDownloaded":
        t.downloaded++;
        return;
      case "TransferExpired":
        t.expired++;
        return;
      case "TransferDeleted":
        t.deleted++;
        return;
      case "ApiKeyCreated":
        report.api_keys.created++;
        return;
      case "ApiKeyRevoked":
        report.api_keys.revoked++;
        return;
      case "ConnectionRequested":
        report.connections.requested++;
        return;
      case "ConnectionAccepted":
        report.connections.accepted++;
        return;
      case "ConnectionDeclined":
        report.connections.declined++;
        return;
      case "ConnectionRevoked":
        report.connections.revoked++;
        return;
      case "PersonErased":
        report.erasures++;
        return;
      default:
        return;
    }
  }
}

/** The same report as CSV rows `metric,value` (decisions 6.4), in the JSON's order. */
export function reportCsv(report: ComplianceReport): string {
  const rows: [string, string | number | null][] = [
    ["account_id", report.account_id],
    ["month", report.month],
    ["generated_at", report.generated_at],
    ["head_position", report.head_position],
    ...Object.entries(report.transfers).map(([k, v]) => [`transfers.${k}`, v] as [string, number]),
    ...report.by_agent.flatMap((agent) =>
      (["sent", "received", "downloads", "bytes_uploaded"] as const).map(
        (k) => [`by_agent.${agent.agent_id}.${k}`, agent[k]] as [string, number],
      ),
    ),
    ...Object.entries(report.api_keys).map(([k, v]) => [`api_keys.${k}`, v] as [string, number]),
    ...Object.entries(report.connections).map(([k, v]) => [`connections.${k}`, v] as [string, number]),
    ["erasures", report.erasures],
  ];
  return `metric,value\n${rows.map(([metric, value]) => `${metric},${value ?? ""}`).join("\n")}\n`;
}
