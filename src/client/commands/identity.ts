import { existsSync } from "node:fs";
import { rm } from "node:fs/promises";
import { resolve } from "node:path";
import { createIdentity, HandoffClient, saveIdentity } from "@handoff/sdk";
import { clientSettings, userAgent } from "../environment.js";
import { parseCommandArgs, required } from "../options.js";
import { printJson } from "../output.js";

/**
 * `handoff identity new --agent SLUG --out FILE [--name N] [--no-register]` (decisions 5.5): both
 * key pairs into FILE (0600), then the one-shot registration. A failed registration removes FILE
 * again, so a retry starts clean; an existing FILE is never overwritten.
 */
export async function identityNew(args: string[]): Promise<number> {
  const { values } = parseCommandArgs(args, {
    agent: { type: "string" },
    out: { type: "string" },
    name: { type: "string" },
    "no-register": { type: "boolean" },
  });
  const agentId = required(values.agent, "--agent SLUG");
  const file = resolve(required(values.out, "--out FILE"));
  if (existsSync(file)) throw new Error(`${file} already exists; refusing to overwrite an identity`);
  const client = values["no-register"]
    ? null
    : new HandoffClient({ ...clientSettings(process.env), userAgent: userAgent("cli") });

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
