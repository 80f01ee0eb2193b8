import type { Party } from "../../../domain/transfer.js";
import { blobKey } from "../../blobs/keys.js";
import type { Actor } from "../streams.js";
import { changeTransfer, type TransferDeps } from "./record.js";

/** Decisions 3.16: download links live 15 minutes. */
export const DOWNLOAD_LINK_MS = 15 * 60 * 1000;

/**
 * Counts one download by the recipient side (the transfer decider says who may) and hands out a
 * signed link per file, valid 15 minutes.
 */
export async function downloadTransfer(deps: TransferDeps, by: Party, actor: Actor, transferId: string) {
  const counted = await changeTransfer(
    deps,
    transferId,
    { type: "RecordDownload", by, linkLifetimeMs: DOWNLOAD_LINK_MS },
    actor,
  );
  const linksExpire = new Date(deps.clock.now().getTime() + DOWNLOAD_LINK_MS);
  const links = await Promise.all(
    counted.transfer.record.files.map(async (file) => ({
      file,
      url: await deps.blobs.downloadUrl(blobKey(transferId, file.fileId), {
        expiresAt: linksExpire,
        fileName: file.name,
        contentType: file.type,
      }),
    })),
  );
  return { ...counted, links };
}

/** Deletes a transfer for either party: its file data goes, its history stays. */
export function deleteTransfer(deps: TransferDeps, by: Party, actor: Actor, transferId: string) {
  return changeTransfer(deps, transferId, { type: "DeleteTransfer", by }, actor);
}
