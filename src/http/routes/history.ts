import type { FastifyPluginAsync } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { ACTOR_KINDS } from "../../../domain/recorded-event.js";
import { findAgent } from "../../queries/agents.js";
import { complianceReport, reportCsv, reportHead } from "../../queries/compliance.js";
import { type HistorySubject, historyOf, presentHistory } from "../../queries/history.js";
import { findTransfer } from "../../queries/transfers.js";
import { callerAccount } from "../auth.js";
import { notFound, validationError } from "../errors.js";
import type { RouteContext } from "../route-context.js";
import { errors, timestamp } from "../schemas.js";

export const historyEntrySchema = z.object({
  position: z.string(),
  type: z.string(),
  at: timestamp,
  actor: z.object({
    kind: z.enum(ACTOR_KINDS),
    account_id: z.string().nullable(),
    agent_id: z.string().nullable(),
    key_id: z.string().nullable(),
  }),
  data: z.record(z.string(), z.unknown()),
});
const entriesSchema = z.object({ entries: z.array(historyEntrySchema) });
const idParams = z.object({ id: z.string() });

const AUDIT_DEFAULT_LIMIT = 100;
const AUDIT_MAX_LIMIT = 1000;
const isoTime = z.iso.datetime({ offset: true });

/** The audit cursor: the last position shown, opaque to callers. */
const encodeCursor = (position: string) => Buffer.from(position, "utf8").toString("base64url");
function decodeCursor(cursor: string): string {
  const position = Buffer.from(cursor, "base64url").toString("utf8");
  if (!/^[\w.:-]{1,200}$/.test(position) || encodeCursor(position) !== cursor) {
    throw validationError("cursor is not one this service gave out", "cursor");
  }
  return position;
}

const MONTH = /^\d{4}-(0[1-9]|1[0-2])$/;

const byAgentSchema = z.object({
  agent_id: z.string(),
  sent: z.number(),
  received: z.number(),
  downloads: z.number(),
  bytes_uploaded: z.number(),
});
const reportSchema = z.object({
  account_id: z.string(),
  month: z.string(),
  generated_at: timestamp.nullable(),
  head_position: z.string().nullable(),
  transfers: z.object({
    created: z.number(),
    downloaded: z.number(),
    expired: z.number(),
    deleted: z.number(),
    bytes_uploaded: z.number(),
    downloads: z.number(),
  }),
  by_agent: z.array(byAgentSchema),
  api_keys: z.object({ created: z.number(), revoked: z.number() }),
  connections: z.object({
    requested: z.number(),
    accepted: z.number(),
    declined: z.number(),
    revoked: z.number(),
  }),
  erasures: z.number(),
});

/** Accept asks for CSV before (or instead of) JSON. */
function wantsCsv(accept: string | undefined): boolean {
  const csv = accept?.indexOf("text/csv") ?? -1;
  const json = accept?.indexOf("application/json") ?? -1;
  return csv >= 0 && (json < 0 || csv < json);
}

/** Decisions 6.1–6.4: what happened, from the events themselves. */
export function historyRoutes({ service }: RouteContext): FastifyPluginAsync {
  const { db, deps } = service;

  async function entriesOf(subject: HistorySubject) {
    return { entries: await presentHistory(deps.people, await historyOf(db, subject)) };
  }

  return async (app) => {
    const routes = app.withTypeProvider<ZodTypeProvider>();

    routes.get(
      "/v1/transfers/:id/history",
      {
        schema: {
          tags: ["history"],
          summary: "A transfer's history in log order: creation, every download, expiry, purge, deletion",
          params: idParams,
          response: { 200: entriesSchema, ...errors(401, 404) },
        },
      },
      async (request) => {
        const caller = callerAccount(request);
        // Decisions 3.3: a transfer's history outlives it, deletion included.
        const transfer = await findTransfer(db, request.params.id);
        const party =
          transfer?.sender_account_id === caller.accountId ||
          transfer?.recipient_account_id === caller.accountId;
        if (!transfer || !party) throw notFound("transfer");
        return entriesOf(`transfer:${transfer.id}`);
      },
    );

    routes.get(
      "/v1/agents/:id/history",
      {
        schema: {
          tags: ["history"],
          summary:
            "An agent's history in log order: its own life and the transfers it sent, received or downloaded",
          params: idParams,
          response: { 200: entriesSchema, ...errors(401, 404) },
        },
      },
      async (request) => {
        const caller = callerAccount(request);
        const agent = await findAgent(db, request.params.id);
        if (!agent || agent.account_id !== caller.accountId) throw notFound("agent");
        return entriesOf(`agent:${agent.id}`);
      },
    );

    routes.get(
      "/v1/audit",
      {
        schema: {
          tags: ["history"],
          summary: "The caller's account's audit feed: every event of the streams it owns or takes part in",
          querystring: z.object({
            from: isoTime.optional(),
            to: isoTime.optional(),
            type: z
              .union([z.string().min(1).max(100), z.array(z.string().min(1).max(100)).max(100)])
              .optional(),
            cursor: z.string().max(400).optional(),
            limit: z.coerce.number().int().min(1).max(AUDIT_MAX_LIMIT).default(AUDIT_DEFAULT_LIMIT),
          }),
          response: {
            200: z.object({
              entries: z.array(historyEntrySchema),
              next_cursor: z.string().nullable(),
              has_more: z.boolean(),
            }),
            ...errors(400, 401),
          },
        },
      },
      async (request) => {
        const caller = callerAccount(request);
        const { from, to, type, cursor, limit } = request.query;
        if (from && to && Date.parse(from) > Date.parse(to))
          throw validationError("from is after to", "from");
        const rows = await historyOf(db, `account:${caller.accountId}`, {
          after: cursor ? decodeCursor(cursor) : null,
          from: from ?? null,
          to: to ?? null,
          types: type === undefined ? [] : Array.isArray(type) ? type : [type],
          limit: limit + 1,
        });
        const shown = rows.slice(0, limit);
        const last = shown.at(-1);
        return {
          entries: await presentHistory(deps.people, shown),
          next_cursor: last ? encodeCursor(last.position) : (cursor ?? null),
          has_more: rows.length > limit,
        };
      },
    );

    routes.get(
      "/v1/reports/compliance",
      {
        schema: {
          tags: ["history"],
          summary: "The account's compliance report for a month (JSON, or CSV with Accept: text/csv)",
          querystring: z.object({ month: z.string().regex(MONTH, "a month as YYYY-MM") }),
          response: { 200: reportSchema, ...errors(400, 401) },
        },
      },
      async (request, reply) => {
        const caller = callerAccount(request);
        const report = await complianceReport(
          db,
          caller.accountId,
          request.query.month,
          await reportHead(db),
        );
        if (wantsCsv(request.headers.accept)) {
          // A string is sent as it is, past the JSON serializer.
          return reply.type("text/csv; charset=utf-8").send(reportCsv(report) as never);
        }
        return report;
      },
    );
  };
}
