import type { FastifyRequest } from "fastify";
import type { Knex } from "knex";
import { type AgentRow, findConnectedAgentBySlug, firstConnectedAgent } from "../queries/agents.js";
import { HttpError, notFound } from "./errors.js";

/** Decisions 3.6: the header naming the agent a request acts as. */
export const AGENT_HEADER = "x-service-agent";

/**
 * The connected agent `X-Service-Agent` names on the account (404 NOT_FOUND if there is none), or
 * null when the request has no such header.
 */
export async function namedAgent(
  db: Knex,
  request: FastifyRequest,
  accountId: string,
): Promise<AgentRow | null> {
  const slug = request.headers[AGENT_HEADER];
  if (typeof slug !== "string" || slug === "") return null;
  const named = await findConnectedAgentBySlug(db, accountId, slug);
  if (!named) throw notFound(`agent '${slug}' (X-Service-Agent)`);
  return named;
}

/**
 * The agent a request made with an account's credential acts as: the connected agent whose slug
 * `X-Service-Agent` names on that account (404 NOT_FOUND if there is none), or, without the
 * header, the account's first connected agent by creation time (404 NO_AGENTS if there is none).
 * Pending and disconnected agents never act.
 */
export async function callingAgent(db: Knex, request: FastifyRequest, accountId: string): Promise<AgentRow> {
  const named = await namedAgent(db, request, accountId);
  if (named) return named;
  const first = await firstConnectedAgent(db, accountId);
  if (!first) throw new HttpError(404, "NO_AGENTS", "this account has no connected agent");
  return first;
}
