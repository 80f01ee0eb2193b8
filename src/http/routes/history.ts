import type { FastifyPluginAsync } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import * as api from "../../contract/history.js";
import { findAgent } from "../../queries/agents.js";
import { complianceReport, reportCsv, reportHead } from "../../queries/compliance.js";
import { type HistorySubject, historyOf, presentHistory } from "../../queries/history.js";
import { findPartyTransfer } from "../../queries/transfers.js";
import { callerAccount } from "../auth.js";
import { notFound, validationError } from "../errors.js";
import type { RouteContext } from "../route-context.js";
import { serve } from "../serve.js";

/** The audit cursor: the last position shown, opaque to callers. */
const encodeCursor = (position: string) => Buffer.from(position, "utf8").toString("base64url");
function decodeCursor(cursor: string): string {
  const position = Buffer.from(cursor, "base64url").toString("utf8");
  if (!/^[\w.:-]{1,200}$/.test(position) || encodeCursor(position) !== cursor) {
    throw validationError("cursor is not one this service gave out", "cursor");
  }
  return position;
}

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

    routes.route({
      ...serve(api.getTransferHistory),
      handler: async (request) => {
        const caller = callerAccount(request);
        const transfer = await findPartyTransfer(db, request.params.id, caller.accountId);
        if (!transfer) throw notFound("transfer");
        return entriesOf(`transfer:${transfer.id}`);
      },
    });

    routes.route({
      ...serve(api.getAgentHistory),
      handler: async (request) => {
        const caller = callerAccount(request);
        const agent = await findAgent(db, request.params.id);
        if (!agent || agent.account_id !== caller.accountId) throw notFound("agent");
        return entriesOf(`agent:${agent.id}`);
      },
    });

    routes.route({
      ...serve(api.getAudit),
      handler: async (request) => {
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
    });

    routes.route({
      ...serve(api.getComplianceReport),
      handler: async (request, reply) => {
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
    });
  };
}
