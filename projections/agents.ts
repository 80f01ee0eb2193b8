import type { AgentEvent, AgentProfile } from "../domain/agent.js";
import { categoryProjection } from "./projection.js";
import type { Changed, Inserted } from "./rows.js";

export interface AgentRow {
  id: string;
  account_id: string;
  /** The agent's slug, unique among its account's live agents. */
  agent_id: string;
  name: string | null;
  description: string | null;
  webhook_url: string | null;
  /** Decisions 8.3: null while no webhook_url is set. */
  webhook_status: "active" | "disabled" | null;
  agent_type: string;
  connection_status: "pending" | "connected" | "disconnected";
  public_key: string | null;
  public_key_algorithm: string;
  signing_public_key: string | null;
  signing_key_algorithm: string;
  key_version: number | null;
  /** The position of the event that set the current keys: its leaf in the log proves them (decisions 9.6). */
  key_position: string | null;
  last_seen_at: Date | null;
  metadata: Record<string, unknown>;
  created_at: Date;
}

const PROFILE_COLUMNS = {
  name: "name",
  description: "description",
  webhookUrl: "webhook_url",
  agentType: "agent_type",
  metadata: "metadata",
} as const satisfies Record<keyof AgentProfile, keyof AgentRow>;

type ProfileColumns = Pick<Inserted<AgentRow>, (typeof PROFILE_COLUMNS)[keyof AgentProfile]>;

/** A whole profile gives every profile column, a change the ones it changes. */
function profileColumns(profile: AgentProfile): ProfileColumns;
function profileColumns(profile: Partial<AgentProfile>): Changed<AgentRow>;
function profileColumns(profile: Partial<AgentProfile>): Changed<AgentRow> {
  const row: Record<string, unknown> = {};
  for (const [field, value] of Object.entries(profile)) {
    const column = PROFILE_COLUMNS[field as keyof AgentProfile];
    row[column] = field === "metadata" ? JSON.stringify(value) : value;
  }
  return row as Changed<AgentRow>;
}

export const agentsProjection = categoryProjection<AgentEvent>({
  name: "agents",
  tables: ["agents"],
  category: "agent",
  async apply(trx, event, id, recorded) {
    switch (event.type) {
      case "AgentRegistered": {
        const { accountId, slug, name, description, webhookUrl, agentType, metadata, registeredAt } =
          event.data;
        await trx("agents").insert({
          id,
          account_id: accountId,
          agent_id: slug,
          connection_status: "pending",
          created_at: registeredAt,
          webhook_status: webhookUrl ? "active" : null,
          ...profileColumns({ name, description, webhookUrl, agentType, metadata }),
        } satisfies Inserted<AgentRow, "public_key_algorithm" | "signing_key_algorithm" | "key_position">);
        return;
      }
      case "AgentConnected":
        await trx("agents")
          .where({ id })
          .update({
            connection_status: "connected",
            public_key: event.data.publicKey,
            signing_public_key: event.data.signingPublicKey,
            key_version: event.data.keyVersion,
            key_position: recorded.position,
          } satisfies Changed<AgentRow>);
        return;
      case "AgentUpdated": {
        const { changes } = event.data;
        // Decisions 8.3: setting a webhook_url (again) enables it; clearing it leaves no status.
        const status: Changed<AgentRow> =
          "webhookUrl" in changes ? { webhook_status: changes.webhookUrl ? "active" : null } : {};
        await trx("agents")
          .where({ id })
          .update({ ...profileColumns(changes), ...status } satisfies Changed<AgentRow>);
        return;
      }
      case "WebhookDisabled":
        await trx("agents")
          .where({ id })
          .update({ webhook_status: "disabled" } satisfies Changed<AgentRow>);
        return;
      case "AgentSeen":
        await trx("agents")
          .where({ id })
          .update({ last_seen_at: event.data.at } satisfies Changed<AgentRow>);
        return;
      case "AgentDisconnected":
        await trx("agents")
          .where({ id })
          .update({ connection_status: "disconnected" } satisfies Changed<AgentRow>);
        return;
      default:
        return;
    }
  },
});
