import type { ApiKeyEvent } from "../domain/api-key.js";
import { categoryProjection } from "./projection.js";

export const apiKeysProjection = categoryProjection<ApiKeyEvent>({
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
