import { z } from "zod";
import { IdParams, list, named, timestamp } from "./common.js";
import { operation } from "./operation.js";

export const Connection = named(
  "Connection",
  z.object({
    id: z.uuid(),
    status: z.enum(["pending", "active", "declined", "revoked"]),
    direction: z.enum(["outgoing", "incoming"]),
    peer_account: z.object({ id: z.uuid(), name: z.string(), email_masked: z.string() }),
    created_at: timestamp,
    updated_at: timestamp,
  }),
  {
    description: "A connection between the caller's account and another (decisions 3.18)",
    example: {
      id: "9d8c7b6a-5f4e-4d3c-8b2a-1f0e9d8c7b6a",
      status: "active",
      direction: "outgoing",
      peer_account: {
        id: "1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d",
        name: "Partner Ltd",
        email_masked: "p*****r@example.com",
      },
      created_at: "2026-01-01T12:00:00.000Z",
      updated_at: "2026-01-01T12:05:00.000Z",
    },
  },
);
export type Connection = z.infer<typeof Connection>;

export const requestConnection = operation({
  operationId: "requestConnection",
  method: "POST",
  path: "/v1/connections",
  security: "apiKey",
  tag: "connections",
  summary: "Invite another account (by e-mail or UUID) to connect",
  body: named(
    "ConnectionRequest",
    z.object({ account: z.string().min(1).max(320).describe("The other account's e-mail address or id") }),
    { description: "Whom to invite", example: { account: "partner@example.com" } },
  ),
  responses: { 201: Connection },
  errors: [403, 404, 409],
});

export const listConnections = operation({
  operationId: "listConnections",
  method: "GET",
  path: "/v1/connections",
  security: "apiKey",
  tag: "connections",
  summary: "The caller's connections, newest first, with their status",
  responses: {
    200: list("ConnectionList", "connections", Connection, "The caller's connections"),
  },
});

export const acceptConnection = operation({
  operationId: "acceptConnection",
  method: "POST",
  path: "/v1/connections/:id/accept",
  security: "apiKey",
  tag: "connections",
  summary: "Accept an invitation (the invited account only)",
  params: IdParams,
  responses: { 200: Connection },
  errors: [403, 404, 409],
});

export const declineConnection = operation({
  operationId: "declineConnection",
  method: "POST",
  path: "/v1/connections/:id/decline",
  security: "apiKey",
  tag: "connections",
  summary: "Decline an invitation (the invited account only)",
  params: IdParams,
  responses: { 200: Connection },
  errors: [403, 404, 409],
});

export const revokeConnection = operation({
  operationId: "revokeConnection",
  method: "DELETE",
  path: "/v1/connections/:id",
  security: "apiKey",
  tag: "connections",
  summary: "End a connection (either side); cross-account sends stop at once",
  params: IdParams,
  responses: { 200: Connection },
  errors: [404],
});

export const connectionOperations = [
  requestConnection,
  listConnections,
  acceptConnection,
  declineConnection,
  revokeConnection,
];
