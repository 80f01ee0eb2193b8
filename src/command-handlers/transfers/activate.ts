import { pipeline, type Readable } from "node:stream";
import { fromBase64, HEADER_SIZE, toBase64, wrapContentKey } from "@handoff/sdk";
import type { ReceivingKey } from "../../../domain/human.js";
import {
  isLegacyAtRest,
  type LegacyAtRest,
  type Transfer,
  type TransferFile,
} from "../../../domain/transfer.js";
import { blobKey } from "../../blobs/keys.js";
import type { Position } from "../../eventstore/port.js";
import { transfersHeldFor } from "../../queries/humans.js";
import { encryptingStage, newHeldContentKey } from "../../security/at-rest.js";
import { DecryptRecords } from "../../security/record-cipher.js";
import { unseal } from "../../security/secrets.js";
import type { Actor } from "../streams.js";
import { changeTransfer, type TransferDeps } from "./record.js";

/** The purpose the data key of a legacy (HOF1) held transfer was sealed for, in its TransferCreated event. */
export const LEGACY_DATA_KEY_PURPOSE = "transfer-data-key";

/** The person whose receiving key a held transfer is wrapped to. */
export interface ReceivingPerson {
  accountId: string;
  email: string;
  receivingKey: ReceivingKey;
}

const HOE1 = Buffer.from("HOE1");

/**
 * Rewrites one file of a legacy held transfer (HOF1 records under its old data key) into the
 * format of decisions 5.3 under K, in place; returns its salt. A file already in that format (an
 * earlier attempt got this far) is left alone, its salt read from its header, so a retry never
 * encrypts twice. The blob store replaces a blob whole or not at all.
 */
async function upcastFile(deps: TransferDeps, key: string, legacy: LegacyAtRest, contentKey: Uint8Array) {
  const head = Buffer.concat(await (await deps.blobs.get(key, { start: 0, end: HEADER_SIZE - 1 })).toArray());
  if (head.subarray(0, 4).equals(HOE1)) return toBase64(head.subarray(8, HEADER_SIZE));
  const dataKey = unseal(deps.serverKey, LEGACY_DATA_KEY_PURPOSE, legacy.wrappedDataKey);
  const { encryptionIv, stage } = encryptingStage(contentKey);
  const body = pipeline([await deps.blobs.get(key), new DecryptRecords(dataKey), stage], () => {});
  await deps.blobs.put(key, body as unknown as Readable, {
    maxBytes: null,
    contentType: "application/octet-stream",
  });
  return encryptionIv;
}

/** K of a held transfer; a legacy one gets a fresh K, held like any other until it is wrapped. */
async function contentKeyOf(deps: TransferDeps, transfer: Transfer): Promise<Uint8Array> {
  const transferId = transfer.record.transferId;
  if (isLegacyAtRest(transfer.record.atRest)) {
    await deps.heldKeys.hold(transferId, newHeldContentKey());
  }
  const key = await deps.heldKeys.get(transferId);
  if (!key) throw new Error(`transfer ${transferId} is held for a person but its content key is missing`);
  return key;
}

async function upcastFiles(
  deps: TransferDeps,
  transfer: Transfer,
  legacy: LegacyAtRest,
  contentKey: Uint8Array,
) {
  const ivs: Record<string, string> = {};
  const files: TransferFile[] = transfer.record.files;
  for (const file of files) {
    ivs[file.fileId] = await upcastFile(
      deps,
      blobKey(transfer.record.transferId, file.fileId),
      legacy,
      contentKey,
    );
  }
  return ivs;
}

/**
 * Decisions 4.5: a held transfer becomes the person's. K is wrapped to their receiving key exactly
 * as a client wraps it (5.2), no file byte is rewritten (except, once, the files of a legacy
 * transfer), and the held copy of K is destroyed once the activation is recorded.
 */
export async function activateHeld(
  deps: TransferDeps,
  transferId: string,
  person: ReceivingPerson,
  actor: Actor,
) {
  const activated = await changeTransfer(
    deps,
    transferId,
    async (transfer) => {
      const { atRest } = transfer.record;
      const wrappedBefore = {
        recipientAccountId: person.accountId,
        recipientKeyVersion: person.receivingKey.keyVersion,
        recipientPublicKey: person.receivingKey.publicKey,
      };
      // Nothing to wrap (active already, or not held): the decider says what that means.
      if (transfer.status !== "pending_recipient" || atRest === null) {
        return {
          type: "WrapForRecipient" as const,
          wrapped: { ...wrappedBefore, encryptedKey: "" },
          fileIvs: null,
        };
      }
      const contentKey = await contentKeyOf(deps, transfer);
      const fileIvs = isLegacyAtRest(atRest) ? await upcastFiles(deps, transfer, atRest, contentKey) : null;
      const encryptedKey = await wrapContentKey(contentKey, fromBase64(person.receivingKey.publicKey));
      return { type: "WrapForRecipient" as const, wrapped: { ...wrappedBefore, encryptedKey }, fileIvs };
    },
    actor,
  );
  await deps.heldKeys.destroy([transferId]);
  return activated;
}

/**
 * Activates every transfer held for the person's address. One that cannot be activated now (it
 * expired meanwhile, say) is reported and left to the housekeeper, which looks for held transfers
 * whose person has a key: the receiving key is recorded whatever happens here.
 */
export async function activateHeldFor(
  deps: TransferDeps,
  person: ReceivingPerson,
  actor: Actor,
  onError: (error: unknown) => void,
): Promise<Position | null> {
  let position: Position | null = null;
  for (const transferId of await transfersHeldFor(deps.db, deps.people, person.email, deps.clock.now())) {
    try {
      position = (await activateHeld(deps, transferId, person, actor)).position ?? position;
    } catch (error) {
      onError(error);
    }
  }
  return position;
}
