import type { FastifyPluginAsync } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import {
  redeliverMessage,
  requestWebhookTest,
  rotateWebhookSecret,
} from "../../command-handlers/webhooks.js";
import * as api from "../../contract/webhooks.js";
import { type AgentRow, findAgent } from "../../queries/agents.js";
import { deliveriesPage, presentDelivery } from "../../queries/webhooks.js";
import { callerAccount } from "../auth.js";
import { notFound, validationError } from "../errors.js";
import type { RouteContext } from "../route-context.js";
import { serve } from "../serve.js";

const encodeCursor = (seq: number) => Buffer.from(String(seq)).toString("base64url");

function decodeCursor(cursor: string): string {
  const seq = Buffer.from(cursor, "base64url").toString("utf8");
  if (!/^[0-9]{1,19}$/.test(seq)) throw validationError("cursor is not one this server gave out", "cursor");
  return seq;
}

/** Decisions 8.1–8.3: an agent's webhook secret, test message and delivery log. */
export function webhookRoutes({ service, settle }: RouteContext): FastifyPluginAsync {
  const { db, webhookDeps } = service;

  /** Decisions 8.1: another account's agent is not found here (no 403 that says it exists). */
  async function ownAgent(accountId: string, id: string): Promise<AgentRow> {
    const agent = await findAgent(db, id);
    if (!agent || agent.account_id !== accountId) throw notFound("agent");
    return agent;
  }

  return async (app) => {
    const routes = app.withTypeProvider<ZodTypeProvider>();

    routes.route({
      ...serve(api.rotateWebhookSecret),
      handler: async (request) => {
        const caller = callerAccount(request);
        const agent = await ownAgent(caller.accountId, request.params.id);
        const result = await rotateWebhookSecret(webhookDeps, caller.accountId, agent.id, caller);
        await settle(result.position);
        return { webhook_secret: result.webhookSecret };
      },
    });

    routes.route({
      ...serve(api.testWebhook),
      handler: async (request, reply) => {
        const caller = callerAccount(request);
        const agent = await ownAgent(caller.accountId, request.params.id);
        const result = await requestWebhookTest(webhookDeps, caller.accountId, agent.id, caller);
        await settle(result.position);
        return reply.status(202).send({ message_id: result.messageId });
      },
    });

    routes.route({
      ...serve(api.listWebhookDeliveries),
      handler: async (request) => {
        const caller = callerAccount(request);
        const agent = await ownAgent(caller.accountId, request.params.id);
        const { cursor, limit } = request.query;
        const rows = await deliveriesPage(db, {
          agentId: agent.id,
          before: cursor ? decodeCursor(cursor) : null,
          limit: limit + 1,
        });
        const shown = rows.slice(0, limit);
        const last = shown.at(-1);
        return {
          deliveries: shown.map(presentDelivery),
          next_cursor: last && rows.length > limit ? encodeCursor(last.seq) : null,
          has_more: rows.length > limit,
        };
      },
    });

    routes.route({
      ...serve(api.redeliverWebhookMessage),
      handler: async (request, reply) => {
        const caller = callerAccount(request);
        const agent = await ownAgent(caller.accountId, request.params.id);
        const row = await redeliverMessage(webhookDeps, agent.id, request.params.message_id);
        if (!row) throw notFound("webhook message");
        return reply.status(202).send(presentDelivery(row));
      },
    });
  };
}
