import type { FastifyPluginAsync } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { changePlan, createAccount, defaultAccountName } from "../../command-handlers/accounts.js";
import { type Erasure, type ErasureDeps, eraseAccount, erasePerson } from "../../command-handlers/erasure.js";
import * as api from "../../contract/admin.js";
import { findAccount } from "../../queries/accounts.js";
import { adminActor } from "../auth.js";
import { notFound } from "../errors.js";
import { presentAccount } from "../presenters.js";
import type { RouteContext } from "../route-context.js";
import { serve } from "../serve.js";

const presentErasure = (erasure: Erasure) => ({
  id: erasure.erasureId,
  account_id: erasure.accountId,
  transfers: erasure.transfers,
  erased_at: erasure.erasedAt,
});

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

    routes.route({
      ...serve(api.createAccount),
      handler: async (request, reply) => {
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
    });

    routes.route({
      ...serve(api.changePlan),
      handler: async (request) => {
        const account = await findAccount(db, deps.people, request.params.id);
        if (!account) throw notFound("account");
        const result = await changePlan(deps, account.id, request.body.plan, adminActor(request));
        await settle(result.position);
        return settledAccount(account.id);
      },
    });

    routes.route({
      ...serve(api.eraseAccount),
      handler: async (request) => {
        const account = await findAccount(db, deps.people, request.params.id);
        if (!account) throw notFound("account");
        return presentErasure(await eraseAccount(erasureDeps, account.id, adminActor(request)));
      },
    });

    routes.route({
      ...serve(api.erasePerson),
      handler: async (request) =>
        presentErasure(await erasePerson(erasureDeps, request.body.email, adminActor(request))),
    });

    if (testClock) {
      routes.route({
        ...serve(api.advanceClock),
        handler: async (request) => ({ now: testClock.advance(request.body.advance_seconds).toISOString() }),
      });
    }
  };
}
