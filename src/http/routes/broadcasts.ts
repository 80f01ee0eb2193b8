import type { FastifyPluginAsync } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { markBroadcastRead, publishBroadcast } from "../../command-handlers/broadcasts.js";
import * as api from "../../contract/broadcasts.js";
import { isUuid } from "../../queries/agents.js";
import {
  type BroadcastRow,
  deliverableAgentIds,
  findBroadcast,
  listUnreadBroadcasts,
} from "../../queries/broadcasts.js";
import { adminActor, callerAccount } from "../auth.js";
import { callingAgent } from "../calling-agent.js";
import { notFound, validationError } from "../errors.js";
import type { RouteContext } from "../route-context.js";
import { serve } from "../serve.js";

export function presentBroadcast(row: BroadcastRow): api.Broadcast {
  return {
    id: row.id,
    title: row.title,
    content: row.content,
    severity: row.severity,
    affected_components: row.affected_components,
    agent_count: row.agent_count,
    created_at: new Date(row.created_at).toISOString(),
  };
}

/**
 * Platform broadcasts: the operator publishes (only when ADMIN_TOKEN is set), each agent lists its
 * unread ones and burns them one by one.
 */
export function broadcastRoutes({ service, settle }: RouteContext): FastifyPluginAsync {
  const { db, deps, config } = service;

  return async (app) => {
    const routes = app.withTypeProvider<ZodTypeProvider>();

    if (config.adminToken) {
      routes.route({
        ...serve(api.publishBroadcast),
        handler: async (request, reply) => {
          const { title, content, severity, affected_components, agent_ids } = request.body;
          let agentIds: string[];
          if (agent_ids === undefined) {
            agentIds = await deliverableAgentIds(db);
          } else {
            const named = [...new Set(agent_ids.map((id) => id.toLowerCase()))];
            agentIds = await deliverableAgentIds(db, named);
            const found = new Set(agentIds);
            const missing = named.filter((id) => !found.has(id));
            if (missing.length > 0) {
              throw validationError(
                "agent_ids names agents that do not exist or are disconnected",
                missing.map((id) => ({
                  path: `agent_ids.${agent_ids.findIndex((given) => given.toLowerCase() === id)}`,
                  message: `no live agent ${id}`,
                })),
              );
            }
          }
          const result = await publishBroadcast(
            deps,
            { title, content, severity, affectedComponents: affected_components },
            agentIds,
            adminActor(request),
          );
          await settle(result.position);
          const row = await findBroadcast(db, result.broadcastId);
          if (!row) throw new Error(`broadcast ${result.broadcastId} missing after its write settled`);
          return reply.status(201).send(presentBroadcast(row));
        },
      });
    }

    routes.route({
      ...serve(api.listBroadcasts),
      handler: async (request) => {
        const caller = callerAccount(request);
        const agent = await callingAgent(db, request, caller.accountId);
        const { severity, limit, offset } = request.query;
        const { rows, total } = await listUnreadBroadcasts(db, {
          agentId: agent.id,
          severity: severity ?? null,
          limit,
          offset,
        });
        return {
          broadcasts: rows.map(presentBroadcast),
          total,
          limit,
          offset,
          has_more: offset + rows.length < total,
        };
      },
    });

    routes.route({
      ...serve(api.markBroadcastRead),
      handler: async (request) => {
        const caller = callerAccount(request);
        const agent = await callingAgent(db, request, caller.accountId);
        const id = request.params.id.toLowerCase();
        if (!isUuid(id)) throw notFound("broadcast");
        const result = await markBroadcastRead(deps, id, agent.id, caller);
        await settle(result.position);
        return { broadcast_id: id, agent_id: agent.id, status: "read" as const };
      },
    });
  };
}
