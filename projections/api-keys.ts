import type { ApiKeyEvent } from "../domain/api-key.js";
import { categoryProjection, endedOnErasure } from "./projection.js";
import type { Changed, Inserted } from "./rows.js";

export interface ApiKeyRow {
  id: string;
  account_id: string;
  name: string;
  key_hash: string;
  created_at: Date;
  revoked_at: Date | null;
}

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
        } satisfies Inserted<ApiKeyRow>);
        return;
      }
      case "ApiKeyRevoked":
        await trx("api_keys")
          .where({ id })
          .update({ revoked_at: event.data.revokedAt } satisfies Changed<ApiKeyRow>);
        return;
      default:
        return;
    }
  },
});

/** An erased account's keys all read as revoked from the erasure on. */
export const apiKeysProjection = endedOnErasure(keyLives, "api_keys", "revoked_at");
