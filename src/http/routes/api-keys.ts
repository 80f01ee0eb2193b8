import type { FastifyPluginAsync } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { createApiKey, revokeApiKey } from "../../command-handlers/api-keys.js";
import { findApiKey, listApiKeys } from "../../queries/accounts.js";
import { type Caller, callerAccount } from "../auth.js";
import { HttpError, notFound } from "../errors.js";
import type { RouteContext } from "../route-context.js";
import { errors, nameSchema, timestamp } from "../schemas.js";

const issuedKeySchema = z.object({
  id: z.uuid(),
  name: z.string(),
  api_key: z.string(),
  created_at: timestamp,
});
const revokedKeySchema = z.object({
  id: z.uuid(),
  name: z.string(),
  status: z.literal("revoked"),
  revoked_at: timestamp,
});
const listedKeySchema = z.object({ id: z.uuid(), name: z.string(), created_at: timestamp });
const accountParams = z.object({ account_id: z.string() });
const DEFAULT_KEY_NAME = "api key";

/** A key may only manage its own account's keys. */
function ownAccount(accountId: string, requested: string): void {
  if (requested !== accountId)
    throw new HttpError(403, "FORBIDDEN", "an API key can only manage its own account");
}

export function apiKeyRoutes({ service, settle }: RouteContext): FastifyPluginAsync {
  const { db, deps } = service;

  async function issue(caller: Caller, name: string) {
    const result = await createApiKey(deps, caller.accountId, name, caller);
    await settle(result.position);
    const { id, apiKey, createdAt } = result.apiKey;
    return { id, name, api_key: apiKey, created_at: createdAt };
  }

  return async (app) => {
    const routes = app.withTypeProvider<ZodTypeProvider>();

    routes.get(
      "/v1/api-keys",
      {
        schema: {
          tags: ["api keys"],
          summary: "The caller's account's API keys in use (never the keys themselves), oldest first",
          response: { 200: z.object({ api_keys: z.array(listedKeySchema) }), ...errors(401) },
        },
      },
      async (request) => {
        const rows = await listApiKeys(db, callerAccount(request).accountId);
        return {
          api_keys: rows.map((row) => ({
            id: row.id,
            name: row.name,
            created_at: new Date(row.created_at).toISOString(),
          })),
        };
      },
    );

    routes.post(
      "/v1/api-keys",
      {
        schema: {
          tags: ["api keys"],
          summary: "Create an API key on the caller's account",
          body: z.object({ name: nameSchema.min(1) }),
          response: { 201: issuedKeySchema, ...errors(400, 401, 403, 415) },
        },
      },
      async (request, reply) => {
        const caller = callerAccount(request);
        return reply.status(201).send(await issue(caller, request.body.name));
      },
    );

    routes.post(
      "/v1/accounts/:account_id/api-keys",
      {
        schema: {
          tags: ["api keys"],
          summary: "Create an API key on an account (the caller's own)",
          params: accountParams,
          body: z.object({ name: nameSchema.min(1).optional() }).nullish(),
          response: { 201: issuedKeySchema, ...errors(400, 401, 403, 415) },
        },
      },
      async (request, reply) => {
        const caller = callerAccount(request);
        ownAccount(caller.accountId, request.params.account_id);
        return reply.status(201).send(await issue(caller, request.body?.name ?? DEFAULT_KEY_NAME));
      },
    );

    routes.delete(
      "/v1/accounts/:account_id/api-keys/:key_id",
      {
        schema: {
          tags: ["api keys"],
          summary: "Revoke an API key: its next use answers 401",
          params: accountParams.extend({ key_id: z.string() }),
          response: { 200: revokedKeySchema, ...errors(401, 403, 404) },
        },
      },
      async (request) => {
        const caller = callerAccount(request);
        ownAccount(caller.accountId, request.params.account_id);
        const key = await findApiKey(db, request.params.key_id);
        if (!key || key.account_id !== caller.accountId) throw notFound("API key");
        const result = await revokeApiKey(deps, caller.accountId, key.id, caller);
        await settle(result.position);
        const revoked = await findApiKey(db, key.id);
        if (!revoked?.revoked_at)
          throw new Error(`API key ${key.id} not revoked in the read model after settling`);
        return {
          id: revoked.id,
          name: revoked.name,
          status: "revoked" as const,
          revoked_at: new Date(revoked.revoked_at).toISOString(),
        };
      },
    );
  };
}
