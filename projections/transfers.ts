import type { ErasureEvent } from "../domain/erasure.js";
import { type TransferEvent, type TransferRecord, withWrappedKey } from "../domain/transfer.js";
import { ERASED } from "../src/privacy/personal-data.js";
import { categoryProjection, type Projection } from "./projection.js";

/**
 * One row per transfer: the list, get, inbox and housekeeping all read it. `created_position`
 * (the log position of its creation) orders the list; `inbox_position` (that of its creation, then
 * of its activation) orders the inbox and makes its cursor, so a presigned transfer shown while
 * pending comes round again once active. Both come from the log: identical on rebuild.
 */
const transferLives = categoryProjection<TransferEvent>({
  name: "transfers",
  tables: ["transfers"],
  category: "transfer",
  async apply(trx, event, id, recorded) {
    switch (event.type) {
      case "TransferCreated": {
        const d = event.data;
        await trx("transfers").insert({
          id,
          mode: d.mode,
          sender: d.sender,
          sender_account_id: d.senderAccountId,
          sender_agent_id: d.senderAgentId,
          recipient: d.recipient,
          recipient_person_id: d.recipientPersonId,
          sender_person_id: d.senderPersonId,
          recipient_account_id: d.recipientAccountId,
          recipient_agent_id: d.recipientAgentId,
          status: d.status,
          pending_reason: d.pendingReason ?? null,
          files: JSON.stringify(d.files),
          file_count: d.files.length,
          total_size: d.files.reduce((sum, file) => sum + file.size, 0),
          max_downloads: d.maxDownloads,
          downloads: 0,
          auto_delete: d.autoDelete,
          is_encrypted: d.isEncrypted,
          message: d.message,
          metadata: JSON.stringify(d.metadata),
          encryption: JSON.stringify(d.encryption),
          created_at: d.createdAt,
          expires_at: d.expiresAt,
          created_position: recorded.position,
          inbox_position: recorded.position,
        });
        return;
      }
      case "TransferActivated":
        await trx("transfers").where({ id }).update({ status: "active", inbox_position: recorded.position });
        return;
      case "ContentKeyWrapped": {
        const row = await trx("transfers").where({ id }).first("files", "encryption");
        const record = withWrappedKey(
          { files: row.files, encryption: row.encryption } as TransferRecord,
          event.data,
        );
        await trx("transfers")
          .where({ id })
          .update({
            recipient_account_id: record.recipientAccountId,
            pending_reason: null,
            is_encrypted: true,
            files: JSON.stringify(record.files),
            encryption: JSON.stringify(record.encryption),
          });
        return;
      }
      case "DownloadRecorded":
        await trx("transfers").where({ id }).update({ downloads: event.data.downloads });
        return;
      case "TransferDownloaded":
        await trx("transfers")
          .where({ id })
          .update({ status: "downloaded", purge_after: event.data.purgeAfter });
        return;
      case "TransferExpired":
        await trx("transfers").where({ id }).update({ status: "expired", purge_after: event.data.at });
        return;
      case "TransferDeleted":
        await trx("transfers").where({ id }).update({ status: "deleted", purge_after: event.data.at });
        return;
      case "TransferFilesDeleted":
        await trx("transfers").where({ id }).update({ files_deleted: true });
        return;
      default:
        return;
    }
  },
});

export const transfersProjection: Projection = {
  name: transferLives.name,
  tables: transferLives.tables,
  async apply(trx, recorded) {
    if (recorded.type === "PersonErased") {
      const { transferIds } = recorded.data as ErasureEvent["data"];
      if (transferIds.length === 0) return;
      // Each mode names one person: the recipient of agent-to-human, the sender of human-to-agent.
      await trx("transfers")
        .whereIn("id", transferIds)
        .where({ mode: "agent-to-human" })
        .update({ recipient: ERASED });
      await trx("transfers")
        .whereIn("id", transferIds)
        .where({ mode: "human-to-agent" })
        .update({ sender: ERASED });
      return;
    }
    await transferLives.apply(trx, recorded);
  },
};
