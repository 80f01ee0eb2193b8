import { UploadLocks } from "./locks.js";
import type { AppendRequest, ResumableStore, UploadTarget } from "./port.js";

/**
 * The tus uploads of a blob store, one request at a time per upload (src/blobs/resumable/locks.ts).
 * Reading the offset takes the lock too: it asks a PATCH still running to stop and commit, so the
 * answer is the offset a resuming client must send.
 */
export class ResumableUploads {
  private readonly locks = new UploadLocks();

  constructor(private readonly store: ResumableStore) {}

  offset(target: UploadTarget): Promise<number | "terminated"> {
    return this.locks.with(target.key, idle, () => this.store.offset(target));
  }

  /** `stop` ends the request early (its body stops) when another request for this upload arrives. */
  append(target: UploadTarget, request: AppendRequest, stop: () => void): Promise<number> {
    return this.locks.with(target.key, stop, () => this.store.append(target, request));
  }

  terminate(target: UploadTarget): Promise<void> {
    return this.locks.with(target.key, idle, () => this.store.terminate(target));
  }

  purgeExpired(now: Date): Promise<number> {
    return this.store.purgeExpired(now, (key) => this.locks.isHeld(key));
  }

  remove(keys: string[]): Promise<void> {
    return this.store.remove(keys);
  }
}

const idle = () => {};
