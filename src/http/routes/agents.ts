import type { FastifyPluginAsync } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import type { AgentKeys } from "../../../domain/agent.js";
import { connectAgent, disconnectAgent, registerAgent, updateAgent } from "../../command-handlers/agents.js";
import { type AgentRow, findAgent, listAgents } from "../../queries/agents.js";
import { isBase64Key32 } from "../../security/public-keys.js";
import { callerAccount } from "../auth.js";
import { HttpError, notFound } from "../errors.js";
import { presentAgent } from "../presenters.js";
import type { RouteContext } from "../route-context.js";
import {
  agentListItemSchema,
  agentSchema,
  agentTypeSchema,
  errors,
  longTextSchema,
  metadataSchema,
  nameSchema,
  patchedAgentSchema,
  slugSchema,
  timestamp,
  webhookUrlSchema,
} from "../schemas.js";

const keysSchema = {
  public_key_algorithm: z.literal("X25519").default("X25519"),
  signing_public_key: z.string().optional(),
  signing_key_algorithm: z.literal("Ed25519").default("Ed25519"),
};

const registerBody = z.object({
  agent_id: slugSchema,
  public_key: z.string().optional(),
  ...keysSchema,
  name: nameSchema.optional(),
  description: longTextSchema.optional(),
  webhook_url: webhookUrlSchema.optional(),
  agent_type: agentTypeSchema.optional(),
  metadata: metadataSchema.optional(),
});

const registerResponse = z.object({
  id: z.uuid(),
  agent_id: z.string(),
  name: z.string().nullable(),
  connection_status: z.enum(["pending", "connected"]),
  public_key: z.string().optional(),
  key_version: z.number().int().optional(),
  connection_token: z.string().nullable(),
  claim_code: z.string().nullable(),
  token_expires_at: timestamp.nullable(),
  inbox_url: z.string(),
  created_at: timestamp,
  message: z.string(),
});

const connectBody = z.object({ public_key: z.string(), ...keysSchema });
const connectResponse = z.object({
  agent_id: z.string(),
  status: z.literal("connected"),
  key_version: z.number().int(),
  message: z.string(),
});

const patchBody = z
  .object({
    name: nameSchema,
    description: longTextSchema.nullable(),
    webhook_url: webhookUrlSchema.nullable(),
    agent_type: agentTypeSchema,
    metadata: metadataSchema,
  })
  .partial()
  .strict();

const idParams = z.object({ id: z.string() });

/** Checks both keys of a request; a malformed key is INVALID_PUBLIC_KEY, never a generic 400. */
function agentKeys(publicKey: string, signingPublicKey: string | undefined): AgentKeys {
  if (!isBase64Key32(publicKey)) {
    throw new HttpError(400, "INVALID_PUBLIC_KEY", "public_key must be base64 of a 32-byte X25519 key");
  }
  if (signingPublicKey !== undefined && !isBase64Key32(signingPublicKey)) {
    throw new HttpError(
      400,
      "INVALID_PUBLIC_KEY",
      "signing_public_key must be base64 of a 32-byte Ed25519 key",
    );
  }
  return { publicKey, signingPublicKey: signingPublicKey ?? null };
}

export function agentRoutes({ service, settle }: RouteContext): FastifyPluginAsync {
  const { db, deps, config } = service;

  /** The caller's own agent, or the spec's 404 / 403. */
  async function ownAgent(accountId: string, id: string): Promise<AgentRow> {
    const agent = await findAgent(db, id);
    if (!agent) throw notFound("agent");
    if (agent.account_id !== accountId)
      throw new HttpError(403, "FORBIDDEN", "this agent belongs to another account");
    return agent;
  }

  async function settledAgent(id: string): Promise<AgentRow> {
    const agent = await findAgent(db, id);
    if (!agent) throw new Error(`agent ${id} missing from the read model after its write settled`);
    return agent;
  }

  return async (app) => {
    const routes = app.withTypeProvider<ZodTypeProvider>();

    routes.post(
      "/v1/agents/register",
      {
        schema: {
          tags: ["agents"],
          summary: "Register an agent (one-shot with public_key, two-step without)",
          body: registerBody,
          response: { 201: registerResponse, ...errors(400, 401, 403, 409, 415) },
        },
      },
      async (request, reply) => {
        const caller = callerAccount(request);
        const body = request.body;
        const keys =
          body.public_key === undefined ? null : agentKeys(body.public_key, body.signing_public_key);
        const result = await registerAgent(
          deps,
          caller.accountId,
          {
            slug: body.agent_id,
            profile: {
              name: body.name ?? null,
              description: body.description ?? null,
              webhookUrl: body.webhook_url ?? null,
              agentType: body.agent_type ?? "custom",
              metadata: body.metadata ?? {},
            },
            keys,
          },
          caller,
        );
        await settle(result.position);
        const agent = presentAgent(await settledAgent(result.agentId));
        const issued = result.issued;
        return reply.status(201).send({
          id: agent.id,
          agent_id: agent.agent_id,
          name: agent.name,
          connection_status: keys ? "connected" : "pending",
          ...(agent.public_key !== undefined ? { public_key: agent.public_key } : {}),
          ...(agent.key_version !== undefined ? { key_version: agent.key_version } : {}),
          connection_token: issued?.connectionToken ?? null,
          claim_code: issued?.claimCode ?? null,
          token_expires_at: issued?.tokenExpiresAt ?? null,
          inbox_url: `${config.publicBaseUrl}/v1/transfers/inbox?agent_id=${encodeURIComponent(agent.agent_id)}`,
          created_at: agent.created_at,
          message: keys
            ? `Agent ${agent.agent_id} is registered and connected.`
            : `Agent ${agent.agent_id} is registered. Connect it within one hour: POST /v1/agents/connect with the connection token as Bearer.`,
        });
      },
    );

    routes.post(
      "/v1/agents/connect",
      {
        config: { auth: "connectionToken" },
        schema: {
          tags: ["agents"],
          summary: "Complete the two-step registration with the one-time connection token",
          body: connectBody,
          response: { 200: connectResponse, ...errors(400, 401, 415) },
        },
      },
      async (request) => {
        if (request.principal.kind !== "connectionToken")
          throw new Error("connect without a connection token");
        const keys = agentKeys(request.body.public_key, request.body.signing_public_key);
        const result = await connectAgent(deps, request.principal.token, keys, request.id);
        await settle(result.position);
        const agent = await settledAgent(result.agentId);
        return {
          agent_id: agent.agent_id,
          status: "connected" as const,
          key_version: result.keyVersion,
          message: `Agent ${agent.agent_id} is connected.`,
        };
      },
    );

    routes.get(
      "/v1/agents",
      {
        schema: {
          tags: ["agents"],
          summary: "List the agents of the caller's account",
          response: { 200: z.object({ agents: z.array(agentListItemSchema) }), ...errors(401) },
        },
      },
      async (request) => {
        const caller = callerAccount(request);
        const rows = await listAgents(db, caller.accountId);
        return {
          agents: rows.map((row) => {
            const { public_key, public_key_algorithm, signing_public_key, signing_key_algorithm, ...item } =
              presentAgent(row);
            return item;
          }),
        };
      },
    );

    routes.get(
      "/v1/agents/:id",
      {
        schema: {
          tags: ["agents"],
          summary: "Get one agent, with its public keys",
          params: idParams,
          response: { 200: agentSchema, ...errors(401, 403, 404) },
        },
      },
      async (request) => presentAgent(await ownAgent(callerAccount(request).accountId, request.params.id)),
    );

    routes.patch(
      "/v1/agents/:id",
      {
        schema: {
          tags: ["agents"],
          summary: "Change an agent's profile; only the fields present change, keys never",
          params: idParams,
          body: patchBody,
          response: { 200: patchedAgentSchema, ...errors(400, 401, 403, 404, 409, 415) },
        },
      },
      async (request) => {
        const caller = callerAccount(request);
        const agent = await ownAgent(caller.accountId, request.params.id);
        const { name, description, webhook_url, agent_type, metadata } = request.body;
        const changes = Object.fromEntries(
          Object.entries({
            name,
            description,
            webhookUrl: webhook_url,
            agentType: agent_type,
            metadata,
          }).filter(([, value]) => value !== undefined),
        );
        const result = await updateAgent(deps, caller.accountId, agent.id, changes, caller);
        await settle(result.position);
        return presentAgent(await settledAgent(agent.id));
      },
    );

    routes.delete(
      "/v1/agents/:id",
      {
        schema: {
          tags: ["agents"],
          summary: "Disconnect an agent; its slug is free for a re-registration (key rotation)",
          params: idParams,
          response: { 200: agentSchema, ...errors(401, 403, 404) },
        },
      },
      async (request) => {
        const caller = callerAccount(request);
        const agent = await ownAgent(caller.accountId, request.params.id);
        const result = await disconnectAgent(deps, caller.accountId, agent.id, caller);
        await settle(result.position);
        return presentAgent(await settledAgent(agent.id));
      },
    );
  };
}
