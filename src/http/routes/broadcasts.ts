import type { FastifyPluginAsync } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { BROADCAST_SEVERITIES } from "../../../domain/broadcast.js";
import { markBroadcastRead, publishBroadcast } from "../../command-handlers/broadcasts.js";
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
import { errors, timestamp } from "../schemas.js";

const severitySchema = z.enum(BROADCAST_SEVERITIES);

/** Spec 2.5. */
export const broadcastSchema = z.object({
  id: z.uuid(),
  title: z.string(),
  content: z.string().describe("Markdown"),
  severity: severitySchema,
  affected_components: z.array(z.string()),
  agent_count: z.number().int(),
  created_at: timestamp,
});

const publishBody = z.object({
  title: z.string().min(1).max(200),
  content: z.string().max(20_000).describe("Markdown"),
  severity: severitySchema,
  affected_components: z.array(z.string().min(1).max(200)).max(100).default([]),
  agent_ids: z
    .array(z.uuid())
    .optional()
    .describe("agent UUIDs; default every agent that is not disconnected at publish time"),
});

const readResponse = z.object({
  broadcast_id: z.uuid(),
  agent_id: z.uuid().describe("the reading agent's UUID"),
  status: z.literal("read"),
});

/** Documents the header only: loose, so validation keeps every other header on the request. */
const agentHeader = z.looseObject({
  "x-service-agent": z
    .string()
    .optional()
    .describe("slug of the connected agent acting; default the account's first connected agent"),
});

export function presentBroadcast(row: BroadcastRow): z.infer<typeof broadcastSchema> {
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
      routes.post(
        "/v1/admin/broadcasts",
        {
          config: { auth: "admin" },
          schema: {
            tags: ["admin"],
            summary: "Publish a broadcast to every live agent, or to the agents named",
            body: publishBody,
            response: { 201: broadcastSchema, ...errors(400, 401, 415) },
          },
        },
        async (request, reply) => {
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
      );
    }

    routes.get(
      "/v1/broadcasts",
      {
        schema: {
          tags: ["broadcasts"],
          summary: "The calling agent's unread broadcasts, newest first",
          headers: agentHeader,
          querystring: z.object({
            severity: severitySchema.optional(),
            limit: z.coerce.number().int().min(1).max(100).default(20),
            offset: z.coerce.number().int().min(0).default(0),
          }),
          response: {
            200: z.object({
              broadcasts: z.array(broadcastSchema),
              total: z.number().int(),
              limit: z.number().int(),
              offset: z.number().int(),
              has_more: z.boolean(),
            }),
            ...errors(400, 401, 404, 429),
          },
        },
      },
      async (request) => {
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
    );

    routes.put(
      "/v1/broadcasts/:id/read",
      {
        schema: {
          tags: ["broadcasts"],
          summary: "Burn a broadcast for the calling agent: it leaves that agent's unread list for good",
          headers: agentHeader,
          params: z.object({ id: z.string() }),
          response: { 200: readResponse, ...errors(401, 404, 429) },
        },
      },
      async (request) => {
        const caller = callerAccount(request);
        const agent = await callingAgent(db, request, caller.accountId);
        const id = request.params.id.toLowerCase();
        if (!isUuid(id)) throw notFound("broadcast");
        const result = await markBroadcastRead(deps, id, agent.id, caller);
        await settle(result.position);
        return { broadcast_id: id, agent_id: agent.id, status: "read" as const };
      },
    );
  };
}
