import type { Knex } from "knex";

export async function storageUsed(db: Knex, accountId: string): Promise<number> {
  const row = await db("account_usage")
    .where({ account_id: accountId })
    .first<{ storage_bytes: number } | undefined>();
  return Number(row?.storage_bytes ?? 0);
}
