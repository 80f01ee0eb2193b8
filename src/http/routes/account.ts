import type { FastifyPluginAsync } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { limitsOf } from "../../../domain/plans/catalog.js";
import * as api from "../../contract/account.js";
import { findAccount } from "../../queries/accounts.js";
import { findPerson } from "../../queries/humans.js";
import { callerAccount } from "../auth.js";
import { presentAccount, presentPlanLimits } from "../presenters.js";
import type { RouteContext } from "../route-context.js";
import { serve } from "../serve.js";

/**
 * `GET /v1/account`: who the caller is, for an API key as for a session (`handoff whoami`), and the
 * account id the key-management paths need. Needs no agent, unlike the startup profile.
 * `GET /v1/mail-delivery`: whether the sign-up link went out by SMTP or waits in the outbox folder,
 * so the web app's "Check your e-mail" can say where it went (never where the folder is).
 */
export function accountRoutes({ service }: RouteContext): FastifyPluginAsync {
  const { db, deps } = service;
  const delivery = service.config.smtpUrl ? ("smtp" as const) : ("outbox" as const);
  return async (app) => {
    const routes = app.withTypeProvider<ZodTypeProvider>();

    routes.route({
      ...serve(api.getAccount),
      handler: async (request) => {
        const caller = callerAccount(request);
        const account = await findAccount(db, deps.people, caller.accountId);
        if (!account) throw new Error(`account ${caller.accountId} missing from the read model`);
        const person = account.kind === "human" ? await findPerson(db, deps.people, account.id) : null;
        return {
          account: presentAccount(account, person),
          plan_limits: presentPlanLimits(limitsOf(account.plan)),
          credential: { kind: caller.credential, key_id: caller.keyId },
        };
      },
    });

    routes.route({ ...serve(api.getMailDelivery), handler: async () => ({ delivery }) });
  };
}
