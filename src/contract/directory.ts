import { z } from "zod";
import { list, named } from "./common.js";
import { KeyProof } from "./log.js";
import { operation } from "./operation.js";

export const SendableAgent = named(
  "SendableAgent",
  z.object({
    id: z.uuid(),
    agent_id: z.string(),
    name: z.string().nullable(),
    own: z.boolean().describe("Whether the agent is on the caller's own account"),
    account_name: z
      .string()
      .optional()
      .describe("The other account's name, for agents of connected accounts"),
  }),
  {
    description: "An agent the caller may send to (spec 2.2)",
    example: {
      id: "6f1c2b7e-3d4a-4c5b-9e8f-0a1b2c3d4e5f",
      agent_id: "archive-bot",
      name: "Archive",
      own: false,
      account_name: "Partner Ltd",
    },
  },
);
export type SendableAgent = z.infer<typeof SendableAgent>;

export const ResolvedAgent = named(
  "ResolvedAgent",
  z.object({
    agent_id: z.string().describe("The agent's slug, or the person's e-mail address"),
    public_key: z.string().nullable().describe("Base64 X25519 public key to encrypt for; null while pending"),
    public_key_algorithm: z.literal("X25519"),
    key_version: z.number().int().nullable(),
    signing_public_key: z
      .string()
      .nullable()
      .describe("Base64 Ed25519 key that verifies the agent's signatures"),
    connection_status: z.enum(["pending", "connected"]),
    key_proof: KeyProof.nullable().describe(
      "An agent's: the log's proof of these keys (decisions 9.6); null for a person",
    ),
  }),
  { description: "The keys to encrypt for an agent or a person (spec 4.7)" },
);
export type ResolvedAgent = z.infer<typeof ResolvedAgent>;

export const listSendableAgents = operation({
  operationId: "listSendableAgents",
  method: "GET",
  path: "/v1/agents/sendable",
  security: "apiKey",
  tag: "directory",
  summary: "Agents the caller may send to: its own first, then those of connected accounts",
  responses: {
    200: list("SendableAgentList", "agents", SendableAgent, "Agents the caller may send to"),
  },
});

export const resolveAgent = operation({
  operationId: "resolveAgent",
  method: "GET",
  path: "/v1/agents/resolve",
  security: "apiKey",
  tag: "directory",
  summary: "An agent's public keys by slug or UUID: own agents, or those of connected accounts",
  description:
    "With an e-mail address, a person's receiving key, when the caller is connected with them or has sent to them before. Several agents of that slug on connected accounts: 400 AMBIGUOUS_RECIPIENT with `candidates`.",
  query: z.object({
    agent_id: z
      .string()
      .min(1)
      .max(320)
      .refine((ref) => ref.includes("@") || ref.length <= 64, "an agent_id is at most 64 characters")
      .describe("The agent's slug or id, or a person's e-mail address"),
    account: z
      .string()
      .max(320)
      .optional()
      .describe("The account (id or e-mail) to pick among agents of one slug"),
  }),
  responses: { 200: ResolvedAgent },
  errors: [404],
});

export const directoryOperations = [listSendableAgents, resolveAgent];
