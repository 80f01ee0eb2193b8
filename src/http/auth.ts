import type { FastifyInstance, FastifyRequest } from "fastify";
import type { Knex } from "knex";
import type { Actor } from "../commands/streams.js";
import {
  API_KEY_PREFIX,
  apiKeyWellFormed,
  CONNECTION_TOKEN_PREFIX,
  digestsEqual,
  sha256Hex,
} from "../security/secrets.js";
import { HttpError, unauthorized } from "./errors.js";

/** How a route authenticates; set per route as `config: { auth }`. */
export type AuthScheme = "apiKey" | "admin" | "connectionToken" | "none";

export type Principal =
  | { kind: "account"; accountId: string; keyId: string }
  | { kind: "admin" }
  | { kind: "connectionToken"; token: string }
  | { kind: "anonymous" };

declare module "fastify" {
  interface FastifyRequest {
    principal: Principal;
  }
  interface FastifyContextConfig {
    auth?: AuthScheme;
  }
}

export function bearer(request: FastifyRequest): string | null {
  const header = request.headers.authorization;
  if (!header) return null;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match?.[1] ?? null;
}

async function accountOfApiKey(db: Knex, key: string): Promise<Principal | null> {
  if (!apiKeyWellFormed(key)) return null;
  const digest = sha256Hex(key);
  const row = await db("api_keys")
    .where({ key_hash: digest })
    .whereNull("revoked_at")
    .first<{ id: string; account_id: string; key_hash: string } | undefined>();
  if (!row || !digestsEqual(row.key_hash, digest)) return null;
  return { kind: "account", accountId: row.account_id, keyId: row.id };
}

/**
 * Authenticates every request before its body is read, by the scheme its route declares
 * (API key by default), so a request without valid credentials never gets further than 401.
 */
export function registerAuthentication(app: FastifyInstance, db: Knex, adminToken: string | null): void {
  app.decorateRequest("principal", null as never);
  app.addHook("onRequest", async (request) => {
    const scheme: AuthScheme =
      request.routeOptions.config?.auth ?? (request.routeOptions.url ? "apiKey" : "none");
    if (scheme === "none") {
      request.principal = { kind: "anonymous" };
      return;
    }
    const token = bearer(request);
    if (!token) throw unauthorized("missing Authorization: Bearer header");
    switch (scheme) {
      case "admin": {
        if (!adminToken || !digestsEqual(sha256Hex(token), sha256Hex(adminToken))) {
          throw unauthorized("invalid admin token");
        }
        request.principal = { kind: "admin" };
        return;
      }
      case "connectionToken":
        if (!token.startsWith(CONNECTION_TOKEN_PREFIX))
          throw unauthorized("expected a connection token (hct_…)");
        request.principal = { kind: "connectionToken", token };
        return;
      case "apiKey": {
        if (!token.startsWith(API_KEY_PREFIX)) throw unauthorized("expected an API key (hnd_…)");
        const principal = await accountOfApiKey(db, token);
        if (!principal) throw unauthorized("invalid or revoked API key");
        request.principal = principal;
        return;
      }
    }
  });
}

/**
 * The caller's account, for routes that take an API key: also the actor its changes are recorded
 * under (decisions 6.1), with the request id that ties an event to its log lines.
 */
export function callerAccount(request: FastifyRequest): Actor & { accountId: string; keyId: string } {
  const principal = request.principal;
  if (principal.kind !== "account") throw new HttpError(401, "UNAUTHORIZED", "an API key is required");
  return { kind: "api_key", accountId: principal.accountId, keyId: principal.keyId, requestId: request.id };
}

/** The actor of an operator's request through /v1/admin. */
export function adminActor(request: FastifyRequest): Actor {
  return { kind: "admin", accountId: null, keyId: null, requestId: request.id };
}
