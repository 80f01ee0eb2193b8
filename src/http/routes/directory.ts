import type { FastifyPluginAsync } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import * as api from "../../contract/directory.js";
import { areConnected, sendableAgents, visibleAgents } from "../../queries/connections.js";
import { findPersonByEmail, hasSentToPerson, verifiedPersonEmail } from "../../queries/humans.js";
import { AmbiguousRecipientError, pickAgent } from "../../queries/recipients.js";
import { callerAccount } from "../auth.js";
import { notFound } from "../errors.js";
import type { RouteContext } from "../route-context.js";
import { serve } from "../serve.js";

/** Spec 4.6 and 4.7: whom an agent may send to, and the keys to encrypt for them. */
export function directoryRoutes({ service }: RouteContext): FastifyPluginAsync {
  const { db, deps } = service;

  /**
   * Decisions 4.5: a person's receiving key, for a sender to encrypt to: once they have one, and
   * only to an account connected with theirs or that has sent to this address before. Anyone else
   * gets the same 404 as for an address nobody holds.
   */
  async function resolvePerson(callerAccountId: string, email: string) {
    const person = await findPersonByEmail(db, deps.people, email);
    const key = person?.email_verified ? person.receiving_key : null;
    const known =
      person !== undefined &&
      key !== null &&
      (person.account_id === callerAccountId ||
        (await areConnected(db, callerAccountId, person.account_id)) ||
        (await hasSentToPerson(db, deps.people, callerAccountId, email)));
    if (!known || !person || !key) throw notFound("recipient");
    return {
      agent_id: person.email,
      public_key: key.publicKey,
      public_key_algorithm: "X25519" as const,
      key_version: key.keyVersion,
      signing_public_key: null,
      connection_status: "connected" as const,
      // A person's receiving key is derived in the browser and set in a session, not an agent's leaf.
      key_proof: null,
    };
  }

  return async (app) => {
    const routes = app.withTypeProvider<ZodTypeProvider>();

    routes.route({
      ...serve(api.listSendableAgents),
      handler: async (request) => {
        const caller = callerAccount(request);
        const agents = await sendableAgents(
          db,
          deps.people,
          caller.accountId,
          await verifiedPersonEmail(db, deps.people, caller.accountId),
        );
        return {
          agents: agents.map((agent) => {
            const own = agent.account_id === caller.accountId;
            return {
              id: agent.id,
              agent_id: agent.agent_id,
              name: agent.name,
              own,
              ...(own ? {} : { account_name: agent.account_name }),
            };
          }),
        };
      },
    });

    routes.route({
      ...serve(api.resolveAgent),
      handler: async (request) => {
        const caller = callerAccount(request);
        const { agent_id: ref, account } = request.query;
        if (ref.includes("@")) return resolvePerson(caller.accountId, ref);
        const personEmail = await verifiedPersonEmail(db, deps.people, caller.accountId);
        const resolution = pickAgent(
          await visibleAgents(db, deps.people, caller.accountId, ref, personEmail),
          caller.accountId,
          account ?? null,
        );
        if (resolution.kind === "ambiguous") throw new AmbiguousRecipientError(ref, resolution.candidates);
        // Another account's agent without a connection is "not found", never "forbidden": no enumeration.
        if (resolution.kind === "none") throw notFound("agent");
        const agent = resolution.agent;
        return {
          agent_id: agent.agent_id,
          public_key: agent.public_key,
          public_key_algorithm: "X25519" as const,
          key_version: agent.key_version,
          signing_public_key: agent.signing_public_key,
          connection_status: agent.connection_status as "pending" | "connected",
          key_proof: await service.transparency.keyProof(agent.key_position),
        };
      },
    });
  };
}
