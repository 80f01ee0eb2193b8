import type { Knex } from "knex";
import type { AccountKind } from "../../domain/account.js";
import { isUuid } from "./agents.js";

export interface AccountRow {
  id: string;
  email: string;
  name: string;
  plan: string;
  kind: AccountKind;
  created_at: Date;
}

export interface ApiKeyRow {
  id: string;
  account_id: string;
  name: string;
  created_at: Date;
  revoked_at: Date | null;
}

export async function findAccount(db: Knex, id: string): Promise<AccountRow | undefined> {
  if (!isUuid(id)) return undefined;
  return db<AccountRow>("accounts").where({ id }).first();
}

export async function findApiKey(db: Knex, id: string): Promise<ApiKeyRow | undefined> {
  if (!isUuid(id)) return undefined;
  return db<ApiKeyRow>("api_keys")
    .select("id", "account_id", "name", "created_at", "revoked_at")
    .where({ id })
    .first();
}

/** The account's keys still in use, oldest first (revoked ones stay in the history only). */
export async function listApiKeys(db: Knex, accountId: string): Promise<ApiKeyRow[]> {
  return db<ApiKeyRow>("api_keys")
    .select("id", "account_id", "name", "created_at", "revoked_at")
    .where({ account_id: accountId })
    .whereNull("revoked_at")
    .orderBy([{ column: "created_at" }, { column: "id" }]);
}
