import { z } from "zod";
import { ErrorBody, named } from "./common.js";
import { operation, reply } from "./operation.js";

export const Healthy = named("Healthy", z.object({ status: z.literal("ok") }), {
  description: "The process answers",
  example: { status: "ok" },
});
export const Ready = named(
  "Ready",
  z.object({
    status: z.literal("ready"),
    degraded: z
      .array(z.object({ path: z.string(), message: z.string() }))
      .optional()
      .describe("What runs in a fallback now (rate limits counted per process while Redis is away)"),
  }),
  {
    description: "Every store answers, the blob disk has room and the projections are caught up",
    example: { status: "ready" },
  },
);

export const getHealth = operation({
  operationId: "getHealth",
  method: "GET",
  path: "/healthz",
  security: "none",
  tag: "health",
  summary: "200 while the process answers",
  responses: { 200: Healthy },
  needsStorage: false,
});

export const getReadiness = operation({
  operationId: "getReadiness",
  method: "GET",
  path: "/readyz",
  security: "none",
  tag: "health",
  summary:
    "200 when every store answers, the blob disk has room and the projections are caught up; `degraded` names what runs in a fallback",
  responses: {
    200: reply({ description: "Ready to serve", json: Ready }),
    503: reply({ description: "NOT_READY: what is missing is in `details`", json: ErrorBody }),
  },
});

export const healthOperations = [getHealth, getReadiness];
