import type { AgentEvent, AgentProfile } from "../domain/agent.js";
import { categoryProjection } from "./projection.js";

const PROFILE_COLUMNS: Record<keyof AgentProfile, string> = {
  name: "name",
  description: "description",
  webhookUrl: "webhook_url",
  agentType: "agent_type",
  metadata: "metadata",
};

function profileColumns(profile: Partial<AgentProfile>): Record<string, unknown> {
  const row: Record<string, unknown> = {};
  for (const [field, value] of Object.entries(profile)) {
    const column = PROFILE_COLUMNS[field as keyof AgentProfile];
    row[column] = field === "metadata" ? JSON.stringify(value) : value;
  }
  return row;
}

export const agentsProjection = categoryProjection<AgentEvent>({
  name: "agents",
  tables: ["agents"],
  category: "agent",
  async apply(trx, event, id) {
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
        });
        return;
      }
      case "AgentConnected":
        await trx("agents").where({ id }).update({
          connection_status: "connected",
          public_key: event.data.publicKey,
          signing_public_key: event.data.signingPublicKey,
          key_version: event.data.keyVersion,
        });
        return;
      case "AgentUpdated": {
        const { changes } = event.data;
        // Decisions 8.3: setting a webhook_url (again) enables it; clearing it leaves no status.
        const status =
          "webhookUrl" in changes ? { webhook_status: changes.webhookUrl ? "active" : null } : {};
        await trx("agents")
          .where({ id })
          .update({ ...profileColumns(changes), ...status });
        return;
      }
      case "WebhookDisabled":
        await trx("agents").where({ id }).update({ webhook_status: "disabled" });
        return;
      case "AgentSeen":
        await trx("agents").where({ id }).update({ last_seen_at: event.data.at });
        return;
      case "AgentDisconnected":
        await trx("agents").where({ id }).update({ connection_status: "disconnected" });
        return;
      default:
        return;
    }
  },
});
