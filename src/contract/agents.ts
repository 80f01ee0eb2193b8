import { z } from "zod";
import { AGENT_TYPES } from "../../domain/agent.js";
import {
  IdParams,
  list,
  longTextSchema,
  metadataSchema,
  named,
  nameSchema,
  slugSchema,
  timestamp,
  webhookUrlSchema,
} from "./common.js";
import { KeyProof } from "./log.js";
import { operation } from "./operation.js";
import { webhookSecret, webhookStatus } from "./webhooks.js";

export const agentTypeSchema = z.enum(AGENT_TYPES);
const connectionStatus = z.enum(["pending", "connected", "disconnected"]);
const publicKey = z.string().describe("Base64 of the 32-byte X25519 public key");
const signingPublicKey = z.string().describe("Base64 of the 32-byte Ed25519 signing public key");

export const Agent = named(
  "Agent",
  z.object({
    id: z.uuid(),
    agent_id: z.string().describe("The agent's slug, unique on its account"),
    name: z.string().nullable(),
    description: z.string().nullable(),
    webhook_url: z.string().nullable(),
    webhook_status: webhookStatus,
    agent_type: z.string(),
    connection_status: connectionStatus,
    public_key: publicKey.optional().describe("Absent while the agent is pending"),
    public_key_algorithm: z.literal("X25519"),
    signing_public_key: z.string().nullable(),
    signing_key_algorithm: z.literal("Ed25519"),
    key_version: z.number().int().optional(),
    key_proof: KeyProof.nullable(),
    last_seen_at: timestamp.nullable(),
    metadata: z.record(z.string(), z.unknown()),
    created_at: timestamp,
  }),
  { description: "An agent with its public keys (spec 2.1) and the log's proof of them (decisions 9.6)" },
);
export type Agent = z.infer<typeof Agent>;

export const AgentListItem = named(
  "AgentListItem",
  Agent.omit({
    public_key: true,
    public_key_algorithm: true,
    signing_public_key: true,
    signing_key_algorithm: true,
    key_proof: true,
  }),
  { description: "An agent as listed: without its keys" },
);

export const UpdatedAgent = named(
  "UpdatedAgent",
  Agent.pick({
    id: true,
    agent_id: true,
    name: true,
    description: true,
    webhook_url: true,
    webhook_status: true,
    agent_type: true,
    connection_status: true,
    metadata: true,
    created_at: true,
  }).extend({
    webhook_secret: webhookSecret.optional().describe("Only the first time a webhook_url is set"),
  }),
  { description: "An agent after a profile change" },
);

const keyFields = {
  public_key_algorithm: z.literal("X25519").default("X25519"),
  signing_public_key: signingPublicKey.optional(),
  signing_key_algorithm: z.literal("Ed25519").default("Ed25519"),
};

export const AgentRegistration = named(
  "AgentRegistration",
  z.object({
    agent_id: slugSchema.describe("The agent's slug: letters, digits, hyphen, underscore, dot"),
    public_key: publicKey.optional().describe("With it the agent is connected at once; without, two-step"),
    ...keyFields,
    name: nameSchema.optional(),
    description: longTextSchema.optional(),
    webhook_url: webhookUrlSchema.optional(),
    agent_type: agentTypeSchema.optional(),
    metadata: metadataSchema.optional(),
  }),
  {
    description: "Registers an agent: one-shot with `public_key`, two-step without",
    example: { agent_id: "report-bot", public_key: "q1v9Tq4mXo5b3n1d6QmJt2yCk6g0Yw4oH2rj5m8Yb2c=" },
  },
);

export const RegisteredAgent = named(
  "RegisteredAgent",
  z.object({
    id: z.uuid(),
    agent_id: z.string(),
    name: z.string().nullable(),
    connection_status: z.enum(["pending", "connected"]),
    public_key: z.string().optional(),
    key_version: z.number().int().optional(),
    connection_token: z
      .string()
      .nullable()
      .describe("Two-step only: the one-time token for POST /v1/agents/connect"),
    claim_code: z.string().nullable(),
    token_expires_at: timestamp.nullable(),
    inbox_url: z.string(),
    webhook_secret: webhookSecret.optional().describe("With a webhook_url: its signing secret, shown once"),
    created_at: timestamp,
    message: z.string(),
  }),
  {
    description: "A newly registered agent; two-step registrations carry their connection token",
    example: {
      id: "6f1c2b7e-3d4a-4c5b-9e8f-0a1b2c3d4e5f",
      agent_id: "report-bot",
      name: null,
      connection_status: "connected",
      public_key: "q1v9Tq4mXo5b3n1d6QmJt2yCk6g0Yw4oH2rj5m8Yb2c=",
      key_version: 1,
      connection_token: null,
      claim_code: null,
      token_expires_at: null,
      inbox_url: "http://127.0.0.1:8080/v1/transfers/inbox?agent_id=report-bot",
      created_at: "2026-01-01T12:00:00.000Z",
      message: "Agent report-bot is registered and connected.",
    },
  },
);

export const AgentConnection = named("AgentConnection", z.object({ public_key: publicKey, ...keyFields }), {
  description: "The keys that complete a two-step registration",
});

export const ConnectedAgent = named(
  "ConnectedAgent",
  z.object({
    agent_id: z.string(),
    status: z.literal("connected"),
    key_version: z.number().int(),
    message: z.string(),
  }),
  { description: "A two-step registration completed" },
);

export const AgentUpdate = named(
  "AgentUpdate",
  z
    .object({
      name: nameSchema,
      description: longTextSchema.nullable(),
      webhook_url: webhookUrlSchema.nullable(),
      agent_type: agentTypeSchema,
      metadata: metadataSchema,
    })
    .partial()
    .strict(),
  { description: "The profile fields to change; keys never change here" },
);

export const AgentList = list("AgentList", "agents", AgentListItem, "The agents of the caller's account");

export const registerAgent = operation({
  operationId: "registerAgent",
  method: "POST",
  path: "/v1/agents/register",
  security: "apiKey",
  tag: "agents",
  summary: "Register an agent (one-shot with public_key, two-step without)",
  body: AgentRegistration,
  responses: { 201: RegisteredAgent },
  errors: [403, 409],
});

export const connectAgent = operation({
  operationId: "connectAgent",
  method: "POST",
  path: "/v1/agents/connect",
  security: "connectionToken",
  tag: "agents",
  summary: "Complete the two-step registration with the one-time connection token",
  body: AgentConnection,
  responses: { 200: ConnectedAgent },
});

export const listAgents = operation({
  operationId: "listAgents",
  method: "GET",
  path: "/v1/agents",
  security: "apiKey",
  tag: "agents",
  summary: "List the agents of the caller's account",
  responses: { 200: AgentList },
});

export const getAgent = operation({
  operationId: "getAgent",
  method: "GET",
  path: "/v1/agents/:id",
  security: "apiKey",
  tag: "agents",
  summary: "Get one agent, with its public keys",
  params: IdParams,
  responses: { 200: Agent },
  errors: [403, 404],
});

export const updateAgent = operation({
  operationId: "updateAgent",
  method: "PATCH",
  path: "/v1/agents/:id",
  security: "apiKey",
  tag: "agents",
  summary: "Change an agent's profile; only the fields present change, keys never",
  params: IdParams,
  body: AgentUpdate,
  responses: { 200: UpdatedAgent },
  errors: [403, 404, 409],
});

export const disconnectAgent = operation({
  operationId: "disconnectAgent",
  method: "DELETE",
  path: "/v1/agents/:id",
  security: "apiKey",
  tag: "agents",
  summary: "Disconnect an agent; its slug is free for a re-registration (key rotation)",
  params: IdParams,
  responses: { 200: Agent },
  errors: [403, 404],
});

export const agentOperations = [
  registerAgent,
  connectAgent,
  listAgents,
  getAgent,
  updateAgent,
  disconnectAgent,
];
