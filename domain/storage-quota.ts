import { type DomainError, refuse } from "./decider.js";
import { overMaxFileSize, type PlanLimits } from "./plan-limits.js";

/**
 * The storage quota (decisions 3.14), every rule of it: an account holds at most its plan's
 * `storageBytes` (domain/plans/plans.json; null: unlimited) of declared file bytes in live
 * transfers. The bytes held are the quota stream's books (`UsageState.bytesHeld`, domain/usage.ts).
 * Where the rules below act:
 *
 * - creating a transfer: the quota stream's decider counts its bytes and refuses STORAGE_FULL past
 *   the limit (`storageRefusal`), in the same atomic append as the transfer, in the account's
 *   books' turn (src/command-handlers/transfers/record.ts), so parallel uploads cannot overfill it;
 * - before that, a multipart upload is cut off mid-stream once a file passes what is left
 *   (`uploadAllowance`, enforced by the blob store's `maxBytes`,
 *   src/command-handlers/transfers/upload.ts), refused as `tooLarge` says;
 * - storage held by a transfer past its expiry is free at once, recorded or not: a sender whose
 *   new transfer could need it has its overdue transfers expired first (`mayNeedOverdue`);
 * - a transfer's expiry, deletion, or last download with auto_delete releases its bytes
 *   (`releasesStorage` in domain/transfer.ts), on the same books in the same turn;
 * - the HTTP edge answers STORAGE_FULL as spec section 7 says, 413 FILE_TOO_LARGE
 *   (src/http/errors.ts).
 */

/** Bytes the account may still store with `bytesHeld` held, or null when its plan has no storage limit. */
export function storageLeft(bytesHeld: number, limits: PlanLimits): number | null {
  return limits.storageBytes === null ? null : Math.max(0, limits.storageBytes - bytesHeld);
}

/** The refusal of `bytes` more on top of `bytesHeld`, or null when they fit (filling it exactly fits). */
export function storageRefusal(bytesHeld: number, bytes: number, limits: PlanLimits): DomainError | null {
  if (limits.storageBytes === null || bytesHeld + bytes <= limits.storageBytes) return null;
  return refuse("STORAGE_FULL", `storage is full: the plan allows ${limits.storageBytes} bytes`);
}

/**
 * The most one file may still have while it streams in: the plan's file size, and what is left of
 * the account's storage after the files before it. Null when neither limits it.
 */
export function uploadAllowance(limits: PlanLimits, storageLeft: number | null): number | null {
  const caps = [limits.maxFileSize, storageLeft].filter((cap): cap is number => cap !== null);
  return caps.length === 0 ? null : Math.min(...caps);
}

/** The refusal of a file cut off at `cutAt` bytes (uploadAllowance): over the plan's file size, or the storage. */
export function tooLarge(fileName: string, limits: PlanLimits, cutAt: number): DomainError {
  const { maxFileSize } = limits;
  return refuse(
    "FILE_TOO_LARGE",
    maxFileSize !== null && cutAt === maxFileSize
      ? overMaxFileSize(fileName, { ...limits, maxFileSize })
      : `'${fileName}' does not fit: the account's storage is full`,
  );
}

/**
 * Whether freeing the storage of the sender's overdue transfers could change the decision on a
 * new transfer of at most `bytesAtMost` bytes (null: unknown, a chunked upload): not when the
 * plan has no limit, nothing is held, or what is left already covers it.
 */
export function mayNeedOverdue(bytesHeld: number, limits: PlanLimits, bytesAtMost: number | null): boolean {
  const left = storageLeft(bytesHeld, limits);
  if (left === null || bytesHeld === 0) return false;
  return bytesAtMost === null || bytesAtMost > left;
}
