import type { ApiKeyEvent } from "../domain/api-key.js";
import { categoryOf, idOf } from "../domain/streams.js";
import { asDomainEvent, type Projection } from "./projection.js";

export const apiKeysProjection: Projection = {
  name: "api_keys",
  tables: ["api_keys"],
  async apply(trx, recorded) {
    if (categoryOf(recorded.streamId) !== "api_key") return;
    const event = asDomainEvent<ApiKeyEvent>(recorded);
    const id = idOf(recorded.streamId);
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
};
