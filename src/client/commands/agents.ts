import type { AgentChanges, HandoffClient, ListedAgent } from "@handoff/sdk";
import { UsageError } from "../../cli-errors.js";
import { confirmed } from "../confirm.js";
import { accountClient } from "../environment.js";
import { printJson } from "../output.js";
import { printList } from "../table.js";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The account's agent with this slug that is not disconnected (a slug is unique among those). */
export async function agentBySlug(client: HandoffClient, slug: string): Promise<ListedAgent | undefined> {
  return (await client.agents()).find(
    (agent) => agent.agent_id === slug && agent.connection_status !== "disconnected",
  );
}

/**
 * The UUID of AGENT, given as its UUID or its slug (the agent_id people know it by): the account's
 * agent with that slug that is not disconnected.
 */
export async function agentUuid(client: HandoffClient, agent: string): Promise<string> {
  if (UUID.test(agent)) return agent;
  const found = await agentBySlug(client, agent);
  if (!found) throw new Error(`this account has no agent '${agent}' (handoff agents list shows its agents)`);
  return found.id;
}

/** `handoff agents list [--json]`. */
export async function agentsList(values: { json?: boolean }): Promise<number> {
  const agents = await accountClient("cli").agents();
  printList<ListedAgent>(
    values.json,
    { agents },
    agents,
    [
      { heading: "AGENT", value: (a) => a.agent_id },
      { heading: "STATUS", value: (a) => a.connection_status },
      { heading: "KEY", value: (a) => (a.key_version === undefined ? null : `v${a.key_version}`) },
      { heading: "NAME", value: (a) => a.name },
      { heading: "LAST SEEN", value: (a) => a.last_seen_at },
      { heading: "ID", value: (a) => a.id },
    ],
    "No agents yet: handoff identity new --agent SLUG --out FILE makes one.",
  );
  return 0;
}

/** `handoff agents get AGENT`: the agent with its public keys, as JSON. */
export async function agentsGet(_values: unknown, [agent]: string[]): Promise<number> {
  const client = accountClient("cli");
  printJson(await client.agent(await agentUuid(client, agent ?? "")));
  return 0;
}

export interface AgentUpdateOptions {
  name?: string;
  description?: string;
  agentType?: string;
  webhookUrl?: string;
  metadata?: string;
}

/** The changes the flags ask for; an empty string clears a field that may be empty. */
function agentChanges(values: AgentUpdateOptions): AgentChanges {
  const changes: AgentChanges = {};
  if (values.name !== undefined) changes.name = values.name;
  if (values.description !== undefined) changes.description = values.description || null;
  // Any text goes: the server refuses an unknown type with 400 naming the allowed ones.
  if (values.agentType !== undefined) changes.agent_type = values.agentType as AgentChanges["agent_type"];
  if (values.webhookUrl !== undefined) changes.webhook_url = values.webhookUrl || null;
  if (values.metadata !== undefined) changes.metadata = metadataOption(values.metadata);
  if (Object.keys(changes).length === 0)
    throw new UsageError(
      "nothing to change: give --name, --description, --agent-type, --webhook-url or --metadata",
    );
  return changes;
}

function metadataOption(text: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new UsageError(`--metadata must be a JSON object, e.g. '{"team":"ops"}'; got ${text}`);
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed))
    throw new UsageError(`--metadata must be a JSON object, e.g. '{"team":"ops"}'; got ${text}`);
  return parsed as Record<string, unknown>;
}

/** `handoff agents update AGENT [--name N] [--description D] [--agent-type T] [--webhook-url U] [--metadata JSON]`. */
export async function agentsUpdate(values: AgentUpdateOptions, [agent]: string[]): Promise<number> {
  const changes = agentChanges(values);
  const client = accountClient("cli");
  printJson(await client.updateAgent(await agentUuid(client, agent ?? ""), changes));
  return 0;
}

/** `handoff agents delete AGENT [--yes]`: disconnects it; its slug is free for new keys. */
export async function agentsDelete(values: { yes?: boolean }, [agent]: string[]): Promise<number> {
  const client = accountClient("cli");
  const id = await agentUuid(client, agent ?? "");
  if (!(await confirmed(`Disconnect agent ${agent}`, values.yes))) return 1;
  printJson(await client.deleteAgent(id));
  return 0;
}
