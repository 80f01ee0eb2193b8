import { existsSync } from "node:fs";
import { rm } from "node:fs/promises";
import { resolve } from "node:path";
import {
  type AccountAgent,
  createIdentity,
  HandoffApiError,
  HandoffClient,
  type Identity,
  loadIdentity,
  saveIdentity,
  toBase64,
} from "@handoff/sdk";
import { clientSettings, userAgent } from "../environment.js";
import { required } from "../options.js";
import { printJson, warn } from "../output.js";
import { agentBySlug } from "./agents.js";

export interface IdentityNewOptions {
  agent?: string;
  out?: string;
  name?: string;
  /** false with --no-register. */
  register?: boolean;
  keepExisting?: boolean;
}

/**
 * `handoff identity new --agent SLUG --out FILE [--name N] [--no-register] [--keep-existing]`
 * (decisions 5.5): both key pairs into FILE (0600), then the one-shot registration. A failed
 * registration removes FILE again, so a retry starts clean; an existing FILE is never overwritten.
 * With --keep-existing, a FILE that already holds SLUG's keys is kept (and registered if it is not
 * yet), so the same command can run twice.
 */
export async function identityNew(values: IdentityNewOptions): Promise<number> {
  const agentId = required(values.agent, "--agent SLUG");
  const file = resolve(required(values.out, "--out FILE"));
  const client =
    values.register === false
      ? null
      : new HandoffClient({ ...clientSettings(process.env), userAgent: userAgent("cli") });
  if (existsSync(file)) {
    if (!values.keepExisting) throw new Error(`${file} already exists; refusing to overwrite an identity`);
    return keepIdentity(file, agentId, client, values.name);
  }

  const identity = createIdentity(agentId);
  await saveIdentity(file, identity);
  let agent = null;
  try {
    agent = client && (await client.registerAgent(identity, { name: values.name }));
  } catch (error) {
    await rm(file, { force: true });
    throw error;
  }
  printJson({ file, agent_id: identity.agentId, agent });
  return 0;
}

/** --keep-existing: FILE must hold SLUG's keys; registers them when the account has no such agent yet. */
async function keepIdentity(
  file: string,
  agentId: string,
  client: HandoffClient | null,
  name: string | undefined,
): Promise<number> {
  const refuse = (why: string) =>
    new Error(`${file} already exists and ${why}; refusing to overwrite it (give another --out FILE)`);
  let identity: Identity;
  try {
    identity = await loadIdentity(file);
  } catch {
    throw refuse("is not an identity file");
  }
  if (identity.agentId !== agentId) throw refuse(`holds the keys of agent '${identity.agentId}'`);
  let agent: AccountAgent | null = null;
  if (client) {
    agent = await registeredAgent(client, agentId);
    if (!agent) {
      await client.registerAgent(identity, { name });
      agent = await registeredAgent(client, agentId);
    } else if (agent.public_key !== toBase64(identity.x25519.publicKey)) {
      throw refuse(
        `agent '${agentId}' is registered with other keys (handoff agents delete ${agentId} frees the slug for these)`,
      );
    }
  }
  warn(`${file} already holds the keys of agent '${agentId}'; kept it`);
  printJson({ file, agent_id: agentId, agent, kept: true });
  return 0;
}

/** The account's connected agent with this slug, with its public keys; null when there is none. */
async function registeredAgent(client: HandoffClient, slug: string): Promise<AccountAgent | null> {
  const listed = await agentBySlug(client, slug);
  if (!listed) return null;
  try {
    return await client.agent(listed.id);
  } catch (error) {
    if (error instanceof HandoffApiError && error.status === 404) return null;
    throw error;
  }
}
