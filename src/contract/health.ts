import { z } from "zod";
import { named } from "./common.js";
import { operation, reply } from "./operation.js";

export const Healthy = named("Healthy", z.object({ status: z.literal("ok") }), {
  description: "The process answers",
  example: { status: "ok" },
});
export const Ready = named("Ready", z.object({ status: z.literal("ready") }), {
  description: "Every store answers and the projections are caught up",
  example: { status: "ready" },
});

export const getHealth = operation({
  operationId: "getHealth",
  method: "GET",
  path: "/healthz",
  security: "none",
  tag: "health",
  summary: "200 while the process answers",
  responses: { 200: Healthy },
});

export const getReadiness = operation({
  operationId: "getReadiness",
  method: "GET",
  path: "/readyz",
  security: "none",
  tag: "health",
  summary: "200 when every store answers and the projections are caught up",
  responses: { 200: reply({ description: "Ready to serve", json: Ready }) },
  errors: [503],
});

export const healthOperations = [getHealth, getReadiness];
