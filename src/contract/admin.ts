import { z } from "zod";
import { DEFAULT_PLAN, PLAN_IDS } from "../../domain/plans/catalog.js";
import { IssuedApiKey } from "./api-keys.js";
import { count, IdParams, named, nameSchema, timestamp } from "./common.js";
import { operation } from "./operation.js";
import { Account } from "./people.js";

const Plan = named("Plan", z.enum(PLAN_IDS), { description: "A plan of the catalog" });

export const Erasure = named(
  "Erasure",
  z.object({
    id: z.uuid(),
    account_id: z.uuid().nullable(),
    transfers: count.describe("Transfers whose personal data went with it"),
    erased_at: timestamp,
  }),
  { description: "A completed erasure (decisions 6.5)" },
);

export const createAccount = operation({
  operationId: "createAccount",
  method: "POST",
  path: "/v1/admin/accounts",
  security: "admin",
  tag: "admin",
  summary: "Create an account and its first API key",
  body: named(
    "AccountCreation",
    z.object({
      email: z.email().max(320),
      name: nameSchema.min(1).optional(),
      plan: Plan.default(DEFAULT_PLAN),
    }),
    { description: "A new account", example: { email: "ops@example.com", plan: DEFAULT_PLAN } },
  ),
  responses: {
    201: named("CreatedAccount", z.object({ account: Account, api_key: IssuedApiKey }), {
      description: "The account and its first API key",
    }),
  },
  errors: [409],
});

export const changePlan = operation({
  operationId: "changePlan",
  method: "PATCH",
  path: "/v1/admin/accounts/:id",
  security: "admin",
  tag: "admin",
  summary: "Change an account's plan",
  params: IdParams,
  body: named("PlanChange", z.object({ plan: Plan }), { description: "The new plan" }),
  responses: { 200: Account },
  errors: [404],
});

export const eraseAccount = operation({
  operationId: "eraseAccount",
  method: "POST",
  path: "/v1/admin/accounts/:id/erase",
  security: "admin",
  tag: "admin",
  summary: "Erase an account's personal data by destroying its data key (crypto-shredding)",
  params: IdParams,
  responses: { 200: Erasure },
  errors: [404],
});

export const erasePerson = operation({
  operationId: "erasePerson",
  method: "POST",
  path: "/v1/admin/erasures",
  security: "admin",
  tag: "admin",
  summary: "Erase a person's personal data by e-mail address (with their account, when they have one)",
  body: named("PersonErasure", z.object({ email: z.email().max(320) }), { description: "Whom to erase" }),
  responses: { 200: Erasure },
});

export const advanceClock = operation({
  operationId: "advanceClock",
  method: "POST",
  path: "/v1/admin/clock",
  security: "admin",
  tag: "admin",
  summary: "Move the service clock forward (TEST_CLOCK=1 only)",
  body: named(
    "ClockAdvance",
    z.object({
      advance_seconds: z
        .number()
        .int()
        .min(0)
        .max(10 * 365 * 86400),
    }),
    { description: "How far to move the clock" },
  ),
  responses: {
    200: named("ClockTime", z.object({ now: timestamp }), {
      description: "The service's time after the move",
    }),
  },
});

export const adminOperations = [createAccount, changePlan, eraseAccount, erasePerson, advanceClock];
