import { randomBytes, randomUUID } from "node:crypto";
import { hostname } from "node:os";
import { processRuns } from "../../process-runs.js";
import { UploadLockedError } from "./port.js";

/** What renewing a lease found: still ours, ours but another instance asks for it, or gone. */
export type LeaseRenewal = "held" | "wanted" | "lost";

/**
 * Leases on tus uploads shared by every instance writing into one storage (src/db/upload-leases.ts:
 * a table in the service's database). A lease lapses `ttlMs` after it was last taken or renewed,
 * so the lease of a killed instance frees its upload within that time.
 */
export interface UploadLeaseTable {
  /**
   * Takes `key` for `holder` unless another holder's lease is alive; then asks that one to let go.
   * Answers the holder of the lease afterwards: `holder` when taken, else the other one (null when
   * it let go between the two steps).
   */
  take(key: string, holder: string, ttlMs: number): Promise<string | null>;
  /** Takes `key` from `from`, alive or not, if `from` still holds it: for a holder known to be gone. */
  takeOver(key: string, from: string, holder: string, ttlMs: number): Promise<boolean>;
  renew(key: string, holder: string, ttlMs: number): Promise<LeaseRenewal>;
  release(key: string, holder: string): Promise<void>;
  /** The keys whose lease is alive now (the purge leaves them alone). */
  alive(): Promise<Set<string>>;
}

/** A lease lapses this long after its holder last renewed it: how long a killed instance blocks its upload. */
export const LEASE_TTL_MS = 8000;
/** How often a holder renews, and looks whether another instance asks for the upload. */
const RENEW_MS = 1000;
/** How long a request waits for another instance's holder to stop and let go before answering 423. */
const WAIT_MS = 3000;
const POLL_MS = 100;

/**
 * This process's part of a holder's name, `host/pid/nonce`: which instance holds a lease, for an
 * operator reading the table, and for an instance on the same host to see that it is gone. The
 * nonce tells two lives of one pid apart (a restarted container's server is pid 1 again).
 */
const SELF = { host: hostname(), pid: process.pid, nonce: randomBytes(6).toString("hex") };
const INSTANCE = `${SELF.host}/${SELF.pid}/${SELF.nonce}`;

/**
 * Whether a lease's holder is a process of this host that no longer runs: an instance killed
 * (kill -9, out of memory) whose lease has not lapsed yet. A process that no longer runs writes
 * nothing more, so its lease may be taken at once rather than waited out; a restarted instance
 * thus resumes its own uploads without a 423. A holder on another host, or named otherwise (an
 * older version's), is only ever waited out: nothing here can tell whether it still runs. This
 * needs instances sharing a host name to share its process table (docs/deployment.md).
 */
export function holderIsGone(holder: string): boolean {
  const [host, pid, nonce] = holder.split("/");
  if (host !== SELF.host || !pid || !/^\d+$/.test(pid) || !nonce || !/^[0-9a-f]{12}$/.test(nonce))
    return false;
  if (Number(pid) === SELF.pid) return nonce !== SELF.nonce;
  return !processRuns(Number(pid));
}

/**
 * Runs `work` holding `key`'s lease in `table`. Another instance's holder is asked to stop (its
 * PATCH stops reading and commits what it has) and waited for a little; a holder that keeps it
 * longer, or one killed on another host whose lease has not lapsed yet, makes this request fail
 * with UploadLockedError (423 with Retry-After): the client retries, never writing beside it. A
 * holder gone from this host (holderIsGone) is taken over at once. While
 * `work` runs the lease is renewed; when another instance asks for it, or it was lost (a stall
 * longer than its time to live, the database unreachable), `stop` ends the request early.
 */
export async function withLease<T>(
  table: UploadLeaseTable,
  key: string,
  stop: () => void,
  work: () => Promise<T>,
): Promise<T> {
  const holder = `${INSTANCE}/${randomUUID()}`;
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    const current = await table.take(key, holder, LEASE_TTL_MS);
    if (current === holder) break;
    if (current && holderIsGone(current) && (await table.takeOver(key, current, holder, LEASE_TTL_MS))) break;
    if (Date.now() >= deadline) throw new UploadLockedError();
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
  let stopped = false;
  const renewal = setInterval(() => {
    if (stopped) return;
    table.renew(key, holder, LEASE_TTL_MS).then(
      (state) => {
        if (state !== "held") stopAt();
      },
      () => stopAt(),
    );
  }, RENEW_MS);
  const stopAt = () => {
    stopped = true;
    stop();
  };
  try {
    return await work();
  } finally {
    clearInterval(renewal);
    // A release that fails leaves the lease to lapse on its own.
    await table.release(key, holder).catch(() => {});
  }
}

/** One instance alone on its storage (tests of a single store): nothing to share. */
export const NO_LEASES: UploadLeaseTable = {
  take: async (_key, holder) => holder,
  takeOver: async () => true,
  renew: async () => "held",
  release: async () => {},
  alive: async () => new Set(),
};
