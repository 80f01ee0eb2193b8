import { join } from "node:path";
import type { Config } from "./config.js";
import { EmbeddedStoreBusyError, embeddedStoreOwner } from "./db/embedded-lock.js";

export interface NewAccount {
  email: string;
  name: string;
  plan: string;
}

/**
 * `handoff accounts create` beside a running embedded server: the server owns the data folder,
 * so the account is created through its admin API (POST /v1/admin/accounts, with ADMIN_TOKEN)
 * and its answer, the same JSON the command prints otherwise, is returned. Null when no server
 * holds the folder (or the store is PostgreSQL, which any number of processes share): create it
 * directly. Throws the lock's refusal when the holder cannot be asked.
 */
export async function createAccountOnRunningServer(config: Config, account: NewAccount): Promise<unknown> {
  if (config.databaseUrl) return null;
  const directory = join(config.dataDir, "pg");
  const owner = embeddedStoreOwner(directory);
  if (!owner) return null;
  if (!owner.url) throw new EmbeddedStoreBusyError(directory, owner);
  if (!config.adminToken) {
    throw new Error(
      `${new EmbeddedStoreBusyError(directory, owner).message}; with the server's ADMIN_TOKEN set, accounts create goes through it`,
    );
  }
  const response = await fetch(`${owner.url}/v1/admin/accounts`, {
    method: "POST",
    headers: { authorization: `Bearer ${config.adminToken}`, "content-type": "application/json" },
    body: JSON.stringify(account),
  });
  const answer = (await response.json().catch(() => null)) as { error?: { message?: string } } | null;
  if (response.status !== 201) {
    throw new Error(
      `the running server at ${owner.url} refused the account: ${response.status} ${answer?.error?.message ?? ""}`.trim(),
    );
  }
  return answer;
}
