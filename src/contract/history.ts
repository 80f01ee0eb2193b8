import { z } from "zod";
import { ACTOR_KINDS } from "../../domain/recorded-event.js";
import { byteCount, count, cursorPage, IdParams, list, named, timestamp } from "./common.js";
import { operation, reply } from "./operation.js";

export const ActorKind = named("ActorKind", z.enum(ACTOR_KINDS), {
  description: "Who caused an event (decisions 6.1)",
});

export const HistoryEntry = named(
  "HistoryEntry",
  z.object({
    position: z.string().describe("Opaque; sorts in log order"),
    type: z.string().describe("The event's type, e.g. TransferCreated"),
    at: timestamp,
    actor: z.object({
      kind: ActorKind,
      account_id: z.string().nullable(),
      agent_id: z.string().nullable(),
      key_id: z.string().nullable(),
    }),
    data: z
      .record(z.string(), z.unknown())
      .describe("The event's data: no secrets, personal data opened or [erased]"),
  }),
  { description: "One event as history shows it (decisions 6.1)" },
);
export type HistoryEntry = z.infer<typeof HistoryEntry>;

export const History = list("History", "entries", HistoryEntry, "Events in log order");

export const AuditPage = cursorPage(
  "AuditPage",
  "entries",
  HistoryEntry,
  "A page of the account's audit feed",
);
export type AuditPage = z.infer<typeof AuditPage>;

export const ComplianceReport = named(
  "ComplianceReport",
  z.object({
    account_id: z.string(),
    month: z.string().describe("YYYY-MM"),
    generated_at: timestamp.nullable(),
    head_position: z.string().nullable().describe("The log position the report was computed at"),
    transfers: z.object({
      created: count,
      downloaded: count,
      expired: count,
      deleted: count,
      bytes_uploaded: byteCount,
      downloads: count,
    }),
    by_agent: z.array(
      z.object({
        agent_id: z.string(),
        sent: count,
        received: count,
        downloads: count,
        bytes_uploaded: byteCount,
      }),
    ),
    api_keys: z.object({ created: count, revoked: count }),
    connections: z.object({ requested: count, accepted: count, declined: count, revoked: count }),
    erasures: count,
  }),
  { description: "An account's month as the log stood at `head_position` (decisions 6.4)" },
);
export type ComplianceReport = z.infer<typeof ComplianceReport>;

const AUDIT_DEFAULT_LIMIT = 100;
const AUDIT_MAX_LIMIT = 1000;
const isoTime = z.iso.datetime({ offset: true });
const MONTH = /^\d{4}-(0[1-9]|1[0-2])$/;

export const getTransferHistory = operation({
  operationId: "getTransferHistory",
  method: "GET",
  path: "/v1/transfers/:id/history",
  security: "apiKey",
  tag: "history",
  summary: "A transfer's history in log order: creation, every download, expiry, purge, deletion",
  params: IdParams,
  responses: { 200: History },
  errors: [404],
});

export const getAgentHistory = operation({
  operationId: "getAgentHistory",
  method: "GET",
  path: "/v1/agents/:id/history",
  security: "apiKey",
  tag: "history",
  summary: "An agent's history in log order: its own life and the transfers it sent, received or downloaded",
  params: IdParams,
  responses: { 200: History },
  errors: [404],
});

export const getAudit = operation({
  operationId: "getAudit",
  method: "GET",
  path: "/v1/audit",
  security: "apiKey",
  tag: "history",
  summary: "The caller's account's audit feed: every event of the streams it owns or takes part in",
  query: z.object({
    from: isoTime.optional().describe("Events at or after this time"),
    to: isoTime.optional().describe("Events at or before this time"),
    type: z
      .union([z.string().min(1).max(100), z.array(z.string().min(1).max(100)).max(100)])
      .optional()
      .describe("Only events of these types (repeat the parameter for several)"),
    cursor: z.string().max(400).optional().describe("`next_cursor` of the previous page"),
    limit: z.coerce
      .number()
      .int()
      .min(1)
      .max(AUDIT_MAX_LIMIT)
      .default(AUDIT_DEFAULT_LIMIT)
      .describe("Page size"),
  }),
  responses: { 200: AuditPage },
});

export const getComplianceReport = operation({
  operationId: "getComplianceReport",
  method: "GET",
  path: "/v1/reports/compliance",
  security: "apiKey",
  tag: "history",
  summary: "The account's compliance report for a month (JSON, or CSV with Accept: text/csv)",
  query: z.object({ month: z.string().regex(MONTH, "a month as YYYY-MM").describe("The month, YYYY-MM") }),
  responses: {
    200: reply({
      description: "The report: JSON, or with `Accept: text/csv` one `metric,value` row per figure",
      json: ComplianceReport,
      raw: { "text/csv": "text" },
    }),
  },
});

export const historyOperations = [getTransferHistory, getAgentHistory, getAudit, getComplianceReport];
