import type { ApiKeyInfo } from "@handoff/sdk";
import { confirmed } from "../confirm.js";
import { accountClient } from "../environment.js";
import { required } from "../options.js";
import { printJson, warn } from "../output.js";
import { printList } from "../table.js";

/** `handoff keys list [--json]`: the account's API keys in use; the one in HANDOFF_API_KEY is marked. */
export async function keysList(values: { json?: boolean }): Promise<number> {
  const client = accountClient("cli");
  const [keys, me] = await Promise.all([client.apiKeys(), client.whoami()]);
  printList<ApiKeyInfo>(
    values.json,
    { api_keys: keys },
    keys,
    [
      { heading: "ID", value: (k) => k.id },
      { heading: "NAME", value: (k) => k.name },
      { heading: "CREATED", value: (k) => k.created_at },
      { heading: "", value: (k) => (k.id === me.credential.key_id ? "(this key)" : "") },
    ],
    "No API keys in use.",
  );
  return 0;
}

/** `handoff keys create --name N`: prints the new key once, as JSON; it is never shown again. */
export async function keysCreate(values: { name?: string }): Promise<number> {
  const name = required(values.name, "--name N");
  const key = await accountClient("cli").createApiKey(name);
  printJson(key);
  warn("keep api_key somewhere safe: it is shown this once");
  return 0;
}

/** `handoff keys revoke KEY_ID [--yes]`: the key's next use answers 401. */
export async function keysRevoke(values: { yes?: boolean }, [keyId]: string[]): Promise<number> {
  const client = accountClient("cli");
  const me = await client.whoami();
  const what =
    keyId === me.credential.key_id
      ? `Revoke API key ${keyId}, the one this command runs with`
      : `Revoke API key ${keyId}`;
  if (!(await confirmed(what, values.yes))) return 1;
  printJson(await client.revokeApiKey(me.account.id, keyId ?? ""));
  return 0;
}
