import type { FastifyPluginAsync } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import type { AgentKeys } from "../../../domain/agent.js";
import { connectAgent, disconnectAgent } from "../../command-handlers/agents.js";
import { registerAgentWithWebhook, updateAgentWithWebhook } from "../../command-handlers/webhooks.js";
import * as api from "../../contract/agents.js";
import { type AgentRow, findAgent, listAgents } from "../../queries/agents.js";
import { isBase64Key32 } from "../../security/public-keys.js";
import { callerAccount } from "../auth.js";
import { HttpError, notFound } from "../errors.js";
import { presentAgent } from "../presenters.js";
import type { RouteContext } from "../route-context.js";
import { serve } from "../serve.js";

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
  const { db, deps, config, webhookDeps } = service;

  /** The caller's own agent, or the spec's 404 / 403. */
  async function ownAgent(accountId: string, id: string): Promise<AgentRow> {
    const agent = await findAgent(db, id);
    if (!agent) throw notFound("agent");
    if (agent.account_id !== accountId)
      throw new HttpError(403, "FORBIDDEN", "this agent belongs to another account");
    return agent;
  }

  /** The whole Agent: with the log's proof of its current keys (decisions 9.6). */
  async function withKeyProof(row: AgentRow) {
    return { ...presentAgent(row), key_proof: await service.transparency.keyProof(row.key_position) };
  }

  async function settledAgent(id: string): Promise<AgentRow> {
    const agent = await findAgent(db, id);
    if (!agent) throw new Error(`agent ${id} missing from the read model after its write settled`);
    return agent;
  }

  return async (app) => {
    const routes = app.withTypeProvider<ZodTypeProvider>();

    routes.route({
      ...serve(api.registerAgent),
      handler: async (request, reply) => {
        const caller = callerAccount(request);
        const body = request.body;
        const keys =
          body.public_key === undefined ? null : agentKeys(body.public_key, body.signing_public_key);
        const result = await registerAgentWithWebhook(
          webhookDeps,
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
          ...(result.webhookSecret ? { webhook_secret: result.webhookSecret } : {}),
          created_at: agent.created_at,
          message: keys
            ? `Agent ${agent.agent_id} is registered and connected.`
            : `Agent ${agent.agent_id} is registered. Connect it within one hour: POST /v1/agents/connect with the connection token as Bearer.`,
        });
      },
    });

    routes.route({
      ...serve(api.connectAgent),
      handler: async (request) => {
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
    });

    routes.route({
      ...serve(api.listAgents),
      handler: async (request) => {
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
    });

    routes.route({
      ...serve(api.getAgent),
      handler: async (request) =>
        withKeyProof(await ownAgent(callerAccount(request).accountId, request.params.id)),
    });

    routes.route({
      ...serve(api.updateAgent),
      handler: async (request) => {
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
        const result = await updateAgentWithWebhook(webhookDeps, caller.accountId, agent.id, changes, caller);
        await settle(result.position);
        const { public_key, public_key_algorithm, signing_public_key, signing_key_algorithm, ...updated } =
          presentAgent(await settledAgent(agent.id));
        return { ...updated, ...(result.webhookSecret ? { webhook_secret: result.webhookSecret } : {}) };
      },
    });

    routes.route({
      ...serve(api.disconnectAgent),
      handler: async (request) => {
        const caller = callerAccount(request);
        const agent = await ownAgent(caller.accountId, request.params.id);
        const result = await disconnectAgent(deps, caller.accountId, agent.id, caller);
        await settle(result.position);
        return withKeyProof(await settledAgent(agent.id));
      },
    });
  };
}
