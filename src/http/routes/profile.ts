import type { FastifyPluginAsync } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { limitsOf } from "../../../domain/plans/catalog.js";
import { recordSeen } from "../../command-handlers/agents.js";
import * as api from "../../contract/profile.js";
import { revealRows } from "../../privacy/reveal.js";
import { findAccount } from "../../queries/accounts.js";
import { findAgent } from "../../queries/agents.js";
import { unreadBroadcastCount, urgentUnreadBroadcasts } from "../../queries/broadcasts.js";
import { agentInbox, connectionCounts, pairedAgentSlugs } from "../../queries/profile.js";
import latestVersions from "../../sdk/latest-versions.json" with { type: "json" };
import { callerAccount } from "../auth.js";
import { callingAgent } from "../calling-agent.js";
import { presentPlanLimits } from "../presenters.js";
import type { RouteContext } from "../route-context.js";
import { serve } from "../serve.js";

const RECENT_TRANSFERS = 5;
const iso = (value: Date | string) => new Date(value).toISOString();
/** Spec 4.8: everything an agent needs at start-up, in one call, from read models only. */
export function profileRoutes({ service, settle }: RouteContext): FastifyPluginAsync {
  const { db, deps, clock } = service;

  return async (app) => {
    app.withTypeProvider<ZodTypeProvider>().route({
      ...serve(api.getProfile),
      handler: async (request) => {
        const caller = callerAccount(request);
        const chosen = await callingAgent(db, request, caller.accountId);
        await settle((await recordSeen(deps, chosen.id, caller)).position);
        const agent = (await findAgent(db, chosen.id)) ?? chosen;
        const account = await findAccount(db, deps.people, caller.accountId);
        if (!account) throw new Error(`account ${caller.accountId} missing from the read model`);
        const now = clock.now();
        const [counts, paired, inbox, unread, urgent] = await Promise.all([
          connectionCounts(db, account.id),
          pairedAgentSlugs(db, account.id),
          agentInbox(db, agent.id, now, RECENT_TRANSFERS),
          unreadBroadcastCount(db, agent.id),
          urgentUnreadBroadcasts(db, agent.id),
        ]);
        return {
          agent: {
            id: agent.id,
            agent_id: agent.agent_id,
            name: agent.name,
            description: agent.description,
            connection_status: "connected" as const,
            key_version: agent.key_version ?? 1,
            public_key_algorithm: "X25519" as const,
            last_seen_at: iso(agent.last_seen_at ?? now),
          },
          account: { plan: account.plan, email: account.email },
          plan_limits: presentPlanLimits(limitsOf(account.plan)),
          connections: { ...counts, paired_agents: paired },
          inbox: {
            unread_transfers: inbox.unread,
            // A human sender's address is sealed (decisions 6.5): shown opened, or "[erased]".
            recent: (await revealRows(deps.people, inbox.recent, ["sender"])).map((row) => ({
              id: row.id,
              sender: row.sender,
              status: row.status as "pending" | "active",
              file_count: row.file_count,
              total_size: Number(row.total_size),
              message: row.message,
              is_encrypted: row.is_encrypted,
              created_at: iso(row.created_at),
              expires_at: iso(row.expires_at),
            })),
          },
          broadcasts: {
            unread_count: unread,
            urgent: urgent.map((b) => ({
              id: b.id,
              title: b.title,
              severity: b.severity as "action_required" | "critical",
              content: b.content,
              created_at: iso(b.created_at),
            })),
          },
          sdk: { latest_versions: latestVersions },
        };
      },
    });
  };
}
