import { Duplex } from "node:stream";
import { createEncryptStream, newContentKey } from "@handoff/sdk";
import type { Knex } from "knex";
import { seal, unseal } from "./secrets.js";

/**
 * The server's own encryption of files held for a person (decisions 4.5): exactly the format of
 * decisions 5.3, written by the SDK's crypto core, so the browser opens it with the same code it
 * uses for what agents encrypt themselves.
 */
export function encryptingStage(contentKey: Uint8Array): { encryptionIv: string; stage: Duplex } {
  const { encryptionIv, stream } = createEncryptStream(contentKey);
  return { encryptionIv, stage: Duplex.fromWeb(stream) };
}

export const newHeldContentKey = (): Uint8Array => newContentKey();

const PURPOSE = "held-content-key";

/**
 * The content keys of transfers waiting for their person, sealed under the server key, in a table
 * beside the read models rather than in the log: the log is never rewritten, so a key kept there
 * could never be destroyed. Once a key is wrapped to the person's receiving key its row is deleted
 * (and HeldContentKeyDestroyed recorded); expiry and deletion drop it with the files.
 */
export class HeldContentKeys {
  constructor(
    private readonly db: Knex,
    private readonly serverKey: Buffer,
  ) {}

  async hold(transferId: string, contentKey: Uint8Array): Promise<void> {
    await this.db("held_content_keys")
      .insert({ transfer_id: transferId, sealed_key: seal(this.serverKey, PURPOSE, Buffer.from(contentKey)) })
      .onConflict("transfer_id")
      .ignore();
  }

  async get(transferId: string): Promise<Uint8Array | null> {
    const row = await this.db("held_content_keys")
      .where({ transfer_id: transferId })
      .first<{ sealed_key: string } | undefined>();
    return row ? new Uint8Array(unseal(this.serverKey, PURPOSE, row.sealed_key)) : null;
  }

  async destroy(transferIds: string[]): Promise<void> {
    if (transferIds.length > 0)
      await this.db("held_content_keys").whereIn("transfer_id", transferIds).delete();
  }
}
