import { z } from "zod";
import { BroadcastSeverity } from "./broadcasts.js";
import { byteCount, count, named, timestamp } from "./common.js";
import { operation } from "./operation.js";

const limit = z.number().int().nullable().describe("null: unlimited");

export const Profile = named(
  "Profile",
  z.object({
    agent: z.object({
      id: z.uuid(),
      agent_id: z.string(),
      name: z.string().nullable(),
      description: z.string().nullable(),
      connection_status: z.literal("connected"),
      key_version: z.number().int(),
      public_key_algorithm: z.literal("X25519"),
      last_seen_at: timestamp,
    }),
    account: z.object({ plan: z.string(), email: z.string() }),
    plan_limits: z.object({
      transfers_per_month: limit,
      storage_bytes: limit.meta({ format: "int64" }),
      max_file_size: limit.meta({ format: "int64" }),
      max_agents: limit,
      max_connections: limit,
    }),
    connections: z.object({
      active: count,
      pending_incoming: count,
      pending_outgoing: count,
      paired_agents: z.array(z.string()),
    }),
    inbox: z.object({
      unread_transfers: count,
      recent: z.array(
        z.object({
          id: z.string(),
          sender: z.string(),
          status: z.enum(["pending", "active"]),
          file_count: count,
          total_size: byteCount,
          message: z.string().nullable(),
          is_encrypted: z.boolean(),
          created_at: timestamp,
          expires_at: timestamp,
        }),
      ),
    }),
    broadcasts: z.object({
      unread_count: count,
      urgent: z.array(
        z.object({
          id: z.uuid(),
          title: z.string(),
          severity: BroadcastSeverity.extract(["action_required", "critical"]),
          content: z.string(),
          created_at: timestamp,
        }),
      ),
    }),
    sdk: z.object({ latest_versions: z.object({ node: z.string(), python: z.string(), mcp: z.string() }) }),
  }),
  { description: "Everything an agent needs at start-up, in one call (spec 4.8)" },
);
export type Profile = z.infer<typeof Profile>;

export const getProfile = operation({
  operationId: "getProfile",
  method: "GET",
  path: "/v1/agents/me",
  security: "apiKey",
  tag: "agents",
  summary: "The startup profile of the calling agent (X-Service-Agent, else the first connected one)",
  requestHeaders: ["X-Service-Agent"],
  responses: { 200: Profile },
  errors: [404],
});

export const profileOperations = [getProfile];
