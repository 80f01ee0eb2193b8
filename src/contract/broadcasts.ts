import { z } from "zod";
import { BROADCAST_SEVERITIES } from "../../domain/broadcast.js";
import { count, IdParams, named, offsetPage, timestamp } from "./common.js";
import { operation } from "./operation.js";

export const BroadcastSeverity = named("BroadcastSeverity", z.enum(BROADCAST_SEVERITIES), {
  description: "How urgent a broadcast is; action_required and critical are shown at start-up",
});
export type BroadcastSeverity = z.infer<typeof BroadcastSeverity>;

export const Broadcast = named(
  "Broadcast",
  z.object({
    id: z.uuid(),
    title: z.string(),
    content: z.string().describe("Markdown"),
    severity: BroadcastSeverity,
    affected_components: z.array(z.string()),
    agent_count: count.describe("How many agents it was delivered to"),
    created_at: timestamp,
  }),
  { description: "An announcement from the operator (spec 2.5)" },
);
export type Broadcast = z.infer<typeof Broadcast>;

export const BroadcastPage = offsetPage(
  "BroadcastPage",
  "broadcasts",
  Broadcast,
  "A page of the calling agent's unread broadcasts",
);
export type BroadcastPage = z.infer<typeof BroadcastPage>;

export const BroadcastPublication = named(
  "BroadcastPublication",
  z.object({
    title: z.string().min(1).max(200),
    content: z.string().max(20_000).describe("Markdown"),
    severity: BroadcastSeverity,
    affected_components: z.array(z.string().min(1).max(200)).max(100).default([]),
    agent_ids: z
      .array(z.uuid())
      .optional()
      .describe("agent UUIDs; default every agent that is not disconnected at publish time"),
  }),
  {
    description: "A broadcast to publish",
    example: { title: "Maintenance", content: "At 02:00 UTC", severity: "info" },
  },
);

export const BroadcastRead = named(
  "BroadcastRead",
  z.object({
    broadcast_id: z.uuid(),
    agent_id: z.uuid().describe("the reading agent's UUID"),
    status: z.literal("read"),
  }),
  { description: "A broadcast burnt for an agent" },
);

export const publishBroadcast = operation({
  operationId: "publishBroadcast",
  method: "POST",
  path: "/v1/admin/broadcasts",
  security: "admin",
  tag: "admin",
  summary: "Publish a broadcast to every live agent, or to the agents named",
  body: BroadcastPublication,
  responses: { 201: Broadcast },
});

export const listBroadcasts = operation({
  operationId: "listBroadcasts",
  method: "GET",
  path: "/v1/broadcasts",
  security: "apiKey",
  tag: "broadcasts",
  summary: "The calling agent's unread broadcasts, newest first",
  requestHeaders: ["X-Service-Agent"],
  query: z.object({
    severity: BroadcastSeverity.optional().describe("Only broadcasts of this severity"),
    limit: z.coerce.number().int().min(1).max(100).default(20).describe("Page size"),
    offset: z.coerce.number().int().min(0).default(0).describe("Broadcasts to skip"),
  }),
  responses: { 200: BroadcastPage },
  errors: [404],
});

export const markBroadcastRead = operation({
  operationId: "markBroadcastRead",
  method: "PUT",
  path: "/v1/broadcasts/:id/read",
  security: "apiKey",
  tag: "broadcasts",
  summary: "Burn a broadcast for the calling agent: it leaves that agent's unread list for good",
  requestHeaders: ["X-Service-Agent"],
  params: IdParams,
  responses: { 200: BroadcastRead },
  errors: [404],
});

export const broadcastOperations = [publishBroadcast, listBroadcasts, markBroadcastRead];
