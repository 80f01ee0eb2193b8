import { NO_LEASES, type UploadLeaseTable, withLease } from "./leases.js";
import { UploadLocks } from "./locks.js";
import type { AppendRequest, ResumableStore, UploadTarget } from "./port.js";

/**
 * The tus uploads of a blob store, one request at a time per upload: within this process by its
 * lock (src/blobs/resumable/locks.ts), which asks a request still running to stop and waits for
 * it; across the instances sharing the storage by a lease in the database
 * (src/blobs/resumable/leases.ts), taken once the process's lock is held. Reading the offset takes
 * both too: it asks a PATCH still running to stop and commit, so the answer is the durable offset
 * a resuming client must send.
 */
export class ResumableUploads {
  private readonly locks = new UploadLocks();

  constructor(
    private readonly store: ResumableStore,
    private readonly leases: UploadLeaseTable = NO_LEASES,
  ) {}

  offset(target: UploadTarget): Promise<number | "terminated"> {
    return this.exclusively(target.key, idle, () => this.store.offset(target));
  }

  /** `stop` ends the request early (its body stops) when another request for this upload arrives. */
  append(target: UploadTarget, request: AppendRequest, stop: () => void): Promise<number> {
    return this.exclusively(target.key, stop, () => this.store.append(target, request));
  }

  terminate(target: UploadTarget): Promise<void> {
    return this.exclusively(target.key, idle, () => this.store.terminate(target));
  }

  async purgeExpired(now: Date): Promise<number> {
    const leased = await this.leases.alive();
    return this.store.purgeExpired(now, (key) => this.locks.isHeld(key) || leased.has(key));
  }

  remove(keys: string[]): Promise<void> {
    return this.store.remove(keys);
  }

  private exclusively<T>(key: string, stop: () => void, work: () => Promise<T>): Promise<T> {
    return this.locks.with(key, stop, () => withLease(this.leases, key, stop, work));
  }
}

const idle = () => {};
