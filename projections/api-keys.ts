import type { AccountEvent } from "../domain/account.js";
import type { ApiKeyEvent } from "../domain/api-key.js";
import { categoryProjection, type Projection } from "./projection.js";

const keyLives = categoryProjection<ApiKeyEvent>({
  name: "api_keys",
  tables: ["api_keys"],
  category: "api_key",
  async apply(trx, event, id) {
    switch (event.type) {
      case "ApiKeyCreated": {
        const { accountId, name, keyHash, createdAt } = event.data;
        await trx("api_keys").insert({
          id,
          account_id: accountId,
          name,
          key_hash: keyHash,
          created_at: createdAt,
        });
        return;
      }
      case "ApiKeyRevoked":
        await trx("api_keys").where({ id }).update({ revoked_at: event.data.revokedAt });
        return;
      default:
        return;
    }
  },
});

/** An erased account's keys stop working at once (decisions 6.5): all of them read as revoked. */
export const apiKeysProjection: Projection = {
  name: keyLives.name,
  tables: keyLives.tables,
  async apply(trx, recorded) {
    if (recorded.type === "AccountErased") {
      const { accountId, at } = recorded.data as Extract<AccountEvent, { type: "AccountErased" }>["data"];
      await trx("api_keys")
        .where({ account_id: accountId })
        .whereNull("revoked_at")
        .update({ revoked_at: at });
      return;
    }
    await keyLives.apply(trx, recorded);
  },
};
