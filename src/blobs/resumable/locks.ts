import { UploadLockedError } from "./port.js";

interface Holder {
  released: Promise<void>;
  /** Asks the holder to end early (a PATCH stops reading its body and commits what it has). */
  stop: () => void;
}

/** How long a request waits for the one holding its upload to let go. */
const WAIT_MS = 10_000;

/**
 * One request at a time per upload, within this process. A newcomer asks the holder to stop and
 * waits for it: a client resumes only when it believes its last request dead, and that request's
 * connection may be half-open for minutes before the server notices (tusd does the same). Two
 * PATCHes racing therefore never both append: the second one sees the offset the first one
 * committed, and answers 409 unless the client sent exactly that.
 *
 * Instances that share a bucket do not see each other's locks: across them the upload's lease in
 * the database keeps one writer (src/blobs/resumable/leases.ts), taken once this lock is held.
 */
export class UploadLocks {
  private readonly held = new Map<string, Holder>();

  isHeld(key: string): boolean {
    return this.held.has(key);
  }

  /** Runs `work` holding `key`'s lock; `stop` is what the holder does when asked to let go. */
  async with<T>(key: string, stop: () => void, work: () => Promise<T>): Promise<T> {
    const deadline = Date.now() + WAIT_MS;
    for (let holder = this.held.get(key); holder; holder = this.held.get(key)) {
      holder.stop();
      const left = deadline - Date.now();
      if (left <= 0 || !(await settlesWithin(holder.released, left))) throw new UploadLockedError();
    }
    let release = () => {};
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    this.held.set(key, { released, stop });
    try {
      return await work();
    } finally {
      this.held.delete(key);
      release();
    }
  }
}

async function settlesWithin(promise: Promise<void>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([promise.then(() => true as const), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
