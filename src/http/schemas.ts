import { z } from "zod";
import { AGENT_TYPES } from "../../domain/agent.js";
import { errorBodySchema } from "./errors.js";

/** Decisions 3.22: the input limits every route shares. */
export const slugSchema = z
  .string()
  .min(1)
  .max(64)
  .regex(/^[A-Za-z0-9._-]+$/, "only letters, digits, hyphen, underscore and dot");
export const nameSchema = z.string().max(200);
export const longTextSchema = z.string().max(4000);
export const metadataSchema = z
  .record(z.string(), z.unknown())
  .refine((value) => Buffer.byteLength(JSON.stringify(value)) <= 16 * 1024, "metadata is over 16 KB as JSON");
export const webhookUrlSchema = z.url().max(2048);
export const agentTypeSchema = z.enum(AGENT_TYPES);
export const timestamp = z.string().describe("ISO 8601");

/** Error answers, for the OpenAPI document: each documented status has the one error body. */
export function errors<Status extends number>(...statuses: Status[]): Record<Status, typeof errorBodySchema> {
  return Object.fromEntries(statuses.map((status) => [status, errorBodySchema])) as Record<
    Status,
    typeof errorBodySchema
  >;
}

export const agentSchema = z.object({
  id: z.uuid(),
  agent_id: z.string(),
  name: z.string().nullable(),
  description: z.string().nullable(),
  webhook_url: z.string().nullable(),
  agent_type: z.string(),
  connection_status: z.enum(["pending", "connected", "disconnected"]),
  public_key: z.string().optional(),
  public_key_algorithm: z.literal("X25519"),
  signing_public_key: z.string().nullable(),
  signing_key_algorithm: z.literal("Ed25519"),
  key_version: z.number().int().optional(),
  last_seen_at: timestamp.nullable(),
  metadata: z.record(z.string(), z.unknown()),
  created_at: timestamp,
});

export const agentListItemSchema = agentSchema.omit({
  public_key: true,
  public_key_algorithm: true,
  signing_public_key: true,
  signing_key_algorithm: true,
});

export const patchedAgentSchema = agentSchema.pick({
  id: true,
  agent_id: true,
  name: true,
  description: true,
  webhook_url: true,
  agent_type: true,
  connection_status: true,
  metadata: true,
  created_at: true,
});

const limitSchema = z.number().int().nullable().describe("null: unlimited");

/** A plan's limits as the startup profile and GET /v1/account show them. */
export const planLimitsSchema = z.object({
  transfers_per_month: limitSchema,
  storage_bytes: limitSchema,
  max_file_size: limitSchema,
  max_agents: limitSchema,
  max_connections: limitSchema,
});

/** The account object: `email_verified` only on a person's account (decisions 4.1). */
export const accountSchema = z.object({
  id: z.uuid(),
  email: z.string(),
  name: z.string(),
  plan: z.string(),
  kind: z.enum(["human", "agent"]),
  email_verified: z.boolean().optional(),
  created_at: timestamp,
});
