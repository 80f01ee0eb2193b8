import type { FastifyPluginAsync } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { changeConnection, requestConnection } from "../../command-handlers/connections.js";
import { type AccountRow, findAccount } from "../../queries/accounts.js";
import {
  type ConnectionRow,
  findAccountByEmailOrId,
  findConnection,
  listConnections,
} from "../../queries/connections.js";
import { callerAccount } from "../auth.js";
import { notFound } from "../errors.js";
import { maskEmail } from "../presenters.js";
import type { RouteContext } from "../route-context.js";
import { errors, timestamp } from "../schemas.js";

const connectionSchema = z.object({
  id: z.uuid(),
  status: z.enum(["pending", "active", "declined", "revoked"]),
  direction: z.enum(["outgoing", "incoming"]),
  peer_account: z.object({ id: z.uuid(), name: z.string(), email_masked: z.string() }),
  created_at: timestamp,
  updated_at: timestamp,
});
const idParams = z.object({ id: z.string() });

/** Decisions 3.18: account connections, the trust that cross-account sends, resolve and sendable need. */
export function connectionRoutes({ service, settle }: RouteContext): FastifyPluginAsync {
  const { db, deps } = service;

  async function present(row: ConnectionRow, accountId: string) {
    const outgoing = row.requester_account_id === accountId;
    const peer = (await findAccount(
      db,
      deps.people,
      outgoing ? row.invitee_account_id : row.requester_account_id,
    )) as AccountRow;
    return {
      id: row.id,
      status: row.status,
      direction: outgoing ? ("outgoing" as const) : ("incoming" as const),
      peer_account: { id: peer.id, name: peer.name, email_masked: maskEmail(peer.email) },
      created_at: new Date(row.created_at).toISOString(),
      updated_at: new Date(row.updated_at).toISOString(),
    };
  }

  /** A connection the caller is a side of; any other is "not found". */
  async function ownConnection(id: string, accountId: string): Promise<ConnectionRow> {
    const row = await findConnection(db, id);
    if (!row || (row.requester_account_id !== accountId && row.invitee_account_id !== accountId)) {
      throw notFound("connection");
    }
    return row;
  }

  async function settled(id: string, accountId: string) {
    const row = await findConnection(db, id);
    if (!row) throw new Error(`connection ${id} missing from the read model after its write settled`);
    return present(row, accountId);
  }

  return async (app) => {
    const routes = app.withTypeProvider<ZodTypeProvider>();

    routes.post(
      "/v1/connections",
      {
        schema: {
          tags: ["connections"],
          summary: "Invite another account (by e-mail or UUID) to connect",
          body: z.object({ account: z.string().min(1).max(320) }),
          response: { 201: connectionSchema, ...errors(400, 401, 403, 404, 409, 415) },
        },
      },
      async (request, reply) => {
        const caller = callerAccount(request);
        const peer = await findAccountByEmailOrId(db, deps.people, request.body.account);
        if (!peer) throw notFound("account");
        const result = await requestConnection(deps, caller.accountId, peer.id, caller);
        await settle(result.position);
        return reply.status(201).send(await settled(result.connectionId, caller.accountId));
      },
    );

    routes.get(
      "/v1/connections",
      {
        schema: {
          tags: ["connections"],
          summary: "The caller's connections, newest first, with their status",
          response: { 200: z.object({ connections: z.array(connectionSchema) }), ...errors(401) },
        },
      },
      async (request) => {
        const caller = callerAccount(request);
        const rows = await listConnections(db, caller.accountId);
        return { connections: await Promise.all(rows.map((row) => present(row, caller.accountId))) };
      },
    );

    for (const [action, change] of [
      ["accept", "AcceptConnection"],
      ["decline", "DeclineConnection"],
    ] as const) {
      routes.post(
        `/v1/connections/:id/${action}`,
        {
          schema: {
            tags: ["connections"],
            summary: `${action === "accept" ? "Accept" : "Decline"} an invitation (the invited account only)`,
            params: idParams,
            response: { 200: connectionSchema, ...errors(401, 403, 404, 409) },
          },
        },
        async (request) => {
          const caller = callerAccount(request);
          const row = await ownConnection(request.params.id, caller.accountId);
          const result = await changeConnection(deps, row.pair, row.id, change, caller.accountId, caller);
          await settle(result.position);
          return settled(row.id, caller.accountId);
        },
      );
    }

    routes.delete(
      "/v1/connections/:id",
      {
        schema: {
          tags: ["connections"],
          summary: "End a connection (either side); cross-account sends stop at once",
          params: idParams,
          response: { 200: connectionSchema, ...errors(401, 404) },
        },
      },
      async (request) => {
        const caller = callerAccount(request);
        const row = await ownConnection(request.params.id, caller.accountId);
        const result = await changeConnection(
          deps,
          row.pair,
          row.id,
          "RevokeConnection",
          caller.accountId,
          caller,
        );
        await settle(result.position);
        return settled(row.id, caller.accountId);
      },
    );
  };
}
