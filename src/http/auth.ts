import type { FastifyInstance, FastifyRequest } from "fastify";
import type { Knex } from "knex";
import type { Clock } from "../clock.js";
import type { Actor } from "../command-handlers/streams.js";
import { openSessionAccount } from "../queries/humans.js";
import type { HotLookups } from "../read-models/hot-rows.js";
import { type HumanTokens, SESSION_TOKEN_PREFIX } from "../security/human-tokens.js";
import {
  API_KEY_PREFIX,
  apiKeyWellFormed,
  CONNECTION_TOKEN_PREFIX,
  digestsEqual,
  sha256Hex,
} from "../security/secrets.js";
import { HttpError, unauthorized } from "./errors.js";

/**
 * How a route authenticates; set per route as `config: { auth }`. `apiKey` (the default) takes an
 * account's credential: an API key or a person's session (decisions 4.3, "wherever an account's
 * API key is"); `session` takes a session only.
 */
export type AuthScheme = "apiKey" | "session" | "admin" | "connectionToken" | "none";

/** Which of an account's credentials a request carries; events record its kind. */
export type Credential = { kind: "api_key"; keyId: string } | { kind: "session"; sessionId: string };
export type CredentialKind = Credential["kind"];

export type Principal =
  | { kind: "account"; accountId: string; credential: Credential }
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

async function accountOfApiKey(hot: HotLookups, key: string): Promise<Principal | null> {
  if (!apiKeyWellFormed(key)) return null;
  const digest = sha256Hex(key);
  const row = await hot.liveApiKey(digest);
  if (!row || !digestsEqual(row.key_hash, digest)) return null;
  return { kind: "account", accountId: row.account_id, credential: { kind: "api_key", keyId: row.id } };
}

async function accountOfSession(
  db: Knex,
  tokens: HumanTokens,
  token: string,
  now: Date,
): Promise<Principal | null> {
  const sessionId = tokens.sessionOf(token);
  if (!sessionId) return null;
  const accountId = await openSessionAccount(db, sessionId, now);
  return accountId ? { kind: "account", accountId, credential: { kind: "session", sessionId } } : null;
}

export interface AuthDeps {
  db: Knex;
  hot: HotLookups;
  adminToken: string | null;
  tokens: HumanTokens;
  clock: Clock;
}

/**
 * Authenticates every request before its body is read, by the scheme its route declares
 * (API key by default), so a request without valid credentials never gets further than 401.
 */
export function registerAuthentication(
  app: FastifyInstance,
  { db, hot, adminToken, tokens, clock }: AuthDeps,
): void {
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
      case "session":
      case "apiKey": {
        if (token.startsWith(SESSION_TOKEN_PREFIX)) {
          const principal = await accountOfSession(db, tokens, token, clock.now());
          if (!principal) throw unauthorized("invalid, ended or expired session");
          request.principal = principal;
          return;
        }
        if (scheme === "session") throw unauthorized("expected a session token (hss_…): log in first");
        if (!token.startsWith(API_KEY_PREFIX)) throw unauthorized("expected an API key (hnd_…) or a session");
        const principal = await accountOfApiKey(hot, token);
        if (!principal) throw unauthorized("invalid or revoked API key");
        request.principal = principal;
        return;
      }
    }
  });
}

/**
 * The caller of a route that takes an account's credential: also the actor its changes are
 * recorded under (decisions 6.1: `api_key` or `session`), with the request id that ties an event to
 * its log lines.
 */
export interface Caller extends Actor {
  accountId: string;
  keyId: string | null;
  credential: CredentialKind;
  /** The session a person's request carries; null with an API key. */
  sessionId: string | null;
}

/** The calling account's principal; 401 for anyone else. */
function accountPrincipal(request: FastifyRequest) {
  const principal = request.principal;
  if (principal.kind !== "account") throw new HttpError(401, "UNAUTHORIZED", "an API key is required");
  return principal;
}

/** The caller's account, for routes that take an API key or a session. */
export function callerAccount(request: FastifyRequest): Caller {
  const principal = accountPrincipal(request);
  const { credential } = principal;
  return {
    kind: credential.kind,
    accountId: principal.accountId,
    keyId: credential.kind === "api_key" ? credential.keyId : null,
    credential: credential.kind,
    sessionId: credential.kind === "session" ? credential.sessionId : null,
    requestId: request.id,
  };
}

/** The actor of an operator's request through /v1/admin. */
export function adminActor(request: FastifyRequest): Actor {
  return { kind: "admin", accountId: null, keyId: null, requestId: request.id };
}

/** The id of the credential (API key or session) the calling account used; 401 for anyone else. */
export const callerCredentialId = (request: FastifyRequest): string =>
  credentialId(accountPrincipal(request).credential);

/** The id a credential's rate-limit buckets are counted under (decisions 3.15: per API key; per session for people). */
export function credentialId(credential: Credential): string {
  return credential.kind === "api_key" ? credential.keyId : `session:${credential.sessionId}`;
}
