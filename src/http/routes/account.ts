import type { FastifyPluginAsync } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { limitsOf } from "../../plans/catalog.js";
import { findAccount } from "../../queries/accounts.js";
import { findPerson } from "../../queries/humans.js";
import { callerAccount } from "../auth.js";
import { presentAccount, presentPlanLimits } from "../presenters.js";
import type { RouteContext } from "../route-context.js";
import { accountSchema, errors, planLimitsSchema } from "../schemas.js";

const whoamiSchema = z.object({
  account: accountSchema,
  plan_limits: planLimitsSchema,
  credential: z.object({ kind: z.enum(["api_key", "session"]), key_id: z.uuid().nullable() }),
});

/**
 * `GET /v1/account`: who the caller is, for an API key as for a session (`handoff whoami`), and the
 * account id the key-management paths need. Needs no agent, unlike the startup profile.
 */
export function accountRoutes({ service }: RouteContext): FastifyPluginAsync {
  const { db, deps } = service;
  return async (app) => {
    app.withTypeProvider<ZodTypeProvider>().get(
      "/v1/account",
      {
        schema: {
          tags: ["accounts"],
          summary: "The caller's account, its plan's limits and the credential it called with",
          response: { 200: whoamiSchema, ...errors(401) },
        },
      },
      async (request) => {
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
    );
  };
}
