import { z } from "zod";
import { WEBHOOK_MESSAGE_TYPES } from "../../domain/webhook.js";
import { count, cursorPage, IdParams, named, timestamp } from "./common.js";
import { operation } from "./operation.js";

export const webhookStatus = z
  .enum(["active", "disabled"])
  .nullable()
  .describe("null while no webhook_url is set; `disabled` after 3 days of failures (decisions 8.3)");

export const webhookSecret = z
  .string()
  .describe("`whsec_` + base64 of 32 random bytes; shown only in this answer (decisions 8.1)");

export const WebhookSecret = named("WebhookSecret", z.object({ webhook_secret: webhookSecret }), {
  description: "A new webhook secret; the previous one also signs for 24 hours",
});

export const WebhookAttempt = named(
  "WebhookAttempt",
  z.object({
    at: timestamp,
    status_code: z.number().int().nullable().describe("null when no answer came"),
    duration_ms: count,
    error: z.string().nullable().describe("Why the attempt failed; null when it delivered"),
  }),
  { description: "One attempt to deliver a webhook message" },
);

export const WebhookDelivery = named(
  "WebhookDelivery",
  z.object({
    message_id: z.string().describe("The `webhook-id` header, the same on every attempt"),
    type: z.enum(WEBHOOK_MESSAGE_TYPES),
    status: z.enum(["pending", "delivered", "failed"]),
    attempts: z.array(WebhookAttempt),
    next_attempt_at: timestamp.nullable(),
  }),
  { description: "A webhook message and its attempts (decisions 8.3)" },
);

export const WebhookDeliveryPage = cursorPage(
  "WebhookDeliveryPage",
  "deliveries",
  WebhookDelivery,
  "An agent's webhook messages, newest first",
);

export const WebhookTest = named(
  "WebhookTest",
  z.object({ message_id: z.string().describe("The test message's id, as the delivery log shows it") }),
  { description: "A webhook.test message queued for the agent's endpoint" },
);

const MessageParams = IdParams.extend({ message_id: z.string().max(100).describe("The message's id") });

export const rotateWebhookSecret = operation({
  operationId: "rotateWebhookSecret",
  method: "POST",
  path: "/v1/agents/:id/webhook-secret",
  security: "apiKey",
  tag: "webhooks",
  summary: "Rotate an agent's webhook secret; the old one keeps signing for 24 hours",
  params: IdParams,
  responses: { 200: WebhookSecret },
  errors: [404, 409],
  idempotency: false,
});

export const testWebhook = operation({
  operationId: "testWebhook",
  method: "POST",
  path: "/v1/agents/:id/webhook-test",
  security: "apiKey",
  tag: "webhooks",
  summary: "Send a webhook.test message to an agent's endpoint",
  params: IdParams,
  responses: { 202: WebhookTest },
  errors: [404, 409],
});

export const listWebhookDeliveries = operation({
  operationId: "listWebhookDeliveries",
  method: "GET",
  path: "/v1/agents/:id/webhook-deliveries",
  security: "apiKey",
  tag: "webhooks",
  summary: "An agent's webhook messages and every attempt, newest first",
  params: IdParams,
  query: z.object({
    cursor: z.string().max(200).optional().describe("`next_cursor` of the previous page"),
    limit: z.coerce.number().int().min(1).max(100).default(20).describe("Page size"),
  }),
  responses: { 200: WebhookDeliveryPage },
  errors: [404],
});

export const redeliverWebhookMessage = operation({
  operationId: "redeliverWebhookMessage",
  method: "POST",
  path: "/v1/agents/:id/webhook-deliveries/:message_id/redeliver",
  security: "apiKey",
  tag: "webhooks",
  summary: "Send a message again: same id and body, one more attempt",
  params: MessageParams,
  responses: { 202: WebhookDelivery },
  errors: [404],
});

export const webhookOperations = [
  rotateWebhookSecret,
  testWebhook,
  listWebhookDeliveries,
  redeliverWebhookMessage,
];
