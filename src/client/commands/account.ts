import { accountClient } from "../environment.js";
import { printJson } from "../output.js";
import { humanBytes } from "../table.js";

/** A plan limit as people read it; null is unlimited. */
const limit = (value: number | null, show: (n: number) => string = String) =>
  value === null ? "unlimited" : show(value);

/** `handoff whoami [--json]`: whose key HANDOFF_API_KEY is, the account's plan and its limits. */
export async function whoami(values: { json?: boolean }): Promise<number> {
  const answer = await accountClient("cli").whoami();
  if (values.json) {
    printJson(answer);
    return 0;
  }
  const { account, plan_limits: limits, credential } = answer;
  const lines = [
    ["account", `${account.email} (${account.name}), ${account.kind}`],
    ["id", account.id],
    ["plan", account.plan],
    ["credential", credential.kind === "api_key" ? `API key ${credential.key_id}` : "session"],
    ["transfers", `${limit(limits.transfers_per_month)} a month`],
    ["max file size", limit(limits.max_file_size, humanBytes)],
    ["storage", limit(limits.storage_bytes, humanBytes)],
    ["agents", limit(limits.max_agents)],
    ["connections", limit(limits.max_connections)],
  ];
  const width = Math.max(...lines.map(([label]) => (label ?? "").length));
  process.stdout.write(lines.map(([label, value]) => `${(label ?? "").padEnd(width)}  ${value}\n`).join(""));
  return 0;
}
