import { z } from "zod";
import { named, timestamp } from "./common.js";
import { operation } from "./operation.js";

const limit = z.number().int().nullable().describe("null: unlimited");

export const PlanLimits = named(
  "PlanLimits",
  z.object({
    transfers_per_month: limit,
    storage_bytes: limit,
    max_file_size: limit,
    max_agents: limit,
    max_connections: limit,
  }),
  { description: "A plan's limits (null: unlimited)" },
);

export const WhoAmI = named(
  "WhoAmI",
  z.object({
    account: z.object({
      id: z.uuid(),
      email: z.string(),
      name: z.string(),
      plan: z.string(),
      kind: z.enum(["human", "agent"]),
      email_verified: z.boolean().optional().describe("Only on a person's account"),
      created_at: timestamp,
    }),
    plan_limits: PlanLimits,
    credential: z.object({
      kind: z.enum(["api_key", "session"]),
      key_id: z.uuid().nullable().describe("The API key's id; null for a session"),
    }),
  }),
  { description: "The caller's account, its plan's limits and the credential it called with" },
);

export const MailDelivery = named("MailDelivery", z.object({ delivery: z.enum(["smtp", "outbox"]) }), {
  description: "How e-mail to people leaves: smtp, or outbox (kept on the server: no SMTP configured)",
  example: { delivery: "outbox" },
});

export const getAccount = operation({
  operationId: "getAccount",
  method: "GET",
  path: "/v1/account",
  security: "apiKey",
  tag: "accounts",
  summary: "Who the caller is: the account, its plan's limits and the credential (needs no agent)",
  responses: { 200: WhoAmI },
});

export const getMailDelivery = operation({
  operationId: "getMailDelivery",
  method: "GET",
  path: "/v1/mail-delivery",
  security: "none",
  tag: "people",
  summary: "Whether e-mail to people goes out through SMTP or stays in the server's outbox folder",
  responses: { 200: MailDelivery },
});

export const accountOperations = [getAccount, getMailDelivery];
