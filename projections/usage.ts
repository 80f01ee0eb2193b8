import type { UsageEvent } from "../domain/usage.js";
import { categoryProjection } from "./projection.js";

/** Each account's storage held and transfers counted per billing period. */
export const usageProjection = categoryProjection<UsageEvent>({
  name: "account_usage",
  tables: ["account_usage"],
  category: "usage",
  async apply(trx, event, accountId) {
    const row = await trx("account_usage")
      .where({ account_id: accountId })
      .first<{ storage_bytes: number; transfers_by_period: Record<string, number> } | undefined>();
    const usage = row ?? { storage_bytes: 0, transfers_by_period: {} };
    switch (event.type) {
      case "TransferCounted": {
        const { period, bytes } = event.data;
        usage.storage_bytes = Number(usage.storage_bytes) + bytes;
        usage.transfers_by_period = {
          ...usage.transfers_by_period,
          [period]: (usage.transfers_by_period[period] ?? 0) + 1,
        };
        break;
      }
      case "StorageReleased":
        usage.storage_bytes = Number(usage.storage_bytes) - event.data.bytes;
        break;
      default:
        return;
    }
    await trx("account_usage")
      .insert({
        account_id: accountId,
        storage_bytes: usage.storage_bytes,
        transfers_by_period: JSON.stringify(usage.transfers_by_period),
      })
      .onConflict("account_id")
      .merge();
  },
});
