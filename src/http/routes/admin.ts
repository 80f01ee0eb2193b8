import type { FastifyPluginAsync } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { changePlan, createAccount, defaultAccountName } from "../../command-handlers/accounts.js";
import { type Erasure, type ErasureDeps, eraseAccount, erasePerson } from "../../command-handlers/erasure.js";
import { DEFAULT_PLAN, PLAN_IDS } from "../../plans/catalog.js";
import { findAccount } from "../../queries/accounts.js";
import { adminActor } from "../auth.js";
import { notFound } from "../errors.js";
import { presentAccount } from "../presenters.js";
import type { RouteContext } from "../route-context.js";
import { accountSchema, errors, nameSchema, timestamp } from "../schemas.js";

const planSchema = z.enum(PLAN_IDS);
const erasureSchema = z.object({
  id: z.uuid(),
  account_id: z.uuid().nullable(),
  transfers: z.number().int(),
  erased_at: timestamp,
});

const presentErasure = (erasure: Erasure) => ({
  id: erasure.erasureId,
  account_id: erasure.accountId,
  transfers: erasure.transfers,
  erased_at: erasure.erasedAt,
});
const ADMIN = { auth: "admin" as const };

/** Decisions section 2: operator endpoints, registered only when ADMIN_TOKEN is set. */
export function adminRoutes({ service, settle }: RouteContext): FastifyPluginAsync {
  const { db, deps, testClock } = service;
  const erasureDeps: ErasureDeps = { ...deps, db, mailer: service.mailer, settle };

  async function settledAccount(id: string) {
    const account = await findAccount(db, deps.people, id);
    if (!account) throw new Error(`account ${id} missing from the read model after its write settled`);
    return presentAccount(account);
  }

  return async (app) => {
    const routes = app.withTypeProvider<ZodTypeProvider>();

    routes.post(
      "/v1/admin/accounts",
      {
        config: ADMIN,
        schema: {
          tags: ["admin"],
          summary: "Create an account and its first API key",
          body: z.object({
            email: z.email().max(320),
            name: nameSchema.min(1).optional(),
            plan: planSchema.default(DEFAULT_PLAN),
          }),
          response: {
            201: z.object({
              account: accountSchema,
              api_key: z.object({
                id: z.uuid(),
                name: z.string(),
                api_key: z.string(),
                created_at: timestamp,
              }),
            }),
            ...errors(400, 401, 409, 415),
          },
        },
      },
      async (request, reply) => {
        const { email, name, plan } = request.body;
        const result = await createAccount(
          deps,
          { email, name: name ?? defaultAccountName(email), plan },
          adminActor(request),
        );
        await settle(result.position);
        const { id, name: keyName, apiKey, createdAt } = result.apiKey;
        return reply.status(201).send({
          account: await settledAccount(result.accountId),
          api_key: { id, name: keyName, api_key: apiKey, created_at: createdAt },
        });
      },
    );

    routes.patch(
      "/v1/admin/accounts/:id",
      {
        config: ADMIN,
        schema: {
          tags: ["admin"],
          summary: "Change an account's plan",
          params: z.object({ id: z.string() }),
          body: z.object({ plan: planSchema }),
          response: { 200: accountSchema, ...errors(400, 401, 404, 415) },
        },
      },
      async (request) => {
        const account = await findAccount(db, deps.people, request.params.id);
        if (!account) throw notFound("account");
        const result = await changePlan(deps, account.id, request.body.plan, adminActor(request));
        await settle(result.position);
        return settledAccount(account.id);
      },
    );

    routes.post(
      "/v1/admin/accounts/:id/erase",
      {
        config: ADMIN,
        schema: {
          tags: ["admin"],
          summary: "Erase an account's personal data by destroying its data key (crypto-shredding)",
          params: z.object({ id: z.string() }),
          response: { 200: erasureSchema, ...errors(401, 404) },
        },
      },
      async (request) => {
        const account = await findAccount(db, deps.people, request.params.id);
        if (!account) throw notFound("account");
        return presentErasure(await eraseAccount(erasureDeps, account.id, adminActor(request)));
      },
    );

    routes.post(
      "/v1/admin/erasures",
      {
        config: ADMIN,
        schema: {
          tags: ["admin"],
          summary:
            "Erase a person's personal data by e-mail address (with their account, when they have one)",
          body: z.object({ email: z.email().max(320) }),
          response: { 200: erasureSchema, ...errors(400, 401, 415) },
        },
      },
      async (request) =>
        presentErasure(await erasePerson(erasureDeps, request.body.email, adminActor(request))),
    );

    if (testClock) {
      routes.post(
        "/v1/admin/clock",
        {
          config: ADMIN,
          schema: {
            tags: ["admin"],
            summary: "Move the service clock forward (TEST_CLOCK=1 only)",
            body: z.object({
              advance_seconds: z
                .number()
                .int()
                .min(0)
                .max(10 * 365 * 86400),
            }),
            response: { 200: z.object({ now: timestamp }), ...errors(400, 401, 415) },
          },
        },
        async (request) => ({ now: testClock.advance(request.body.advance_seconds).toISOString() }),
      );
    }
  };
}
