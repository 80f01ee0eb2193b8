import { type AppendResult, type StreamAppend, WrongExpectedVersionError } from "./port.js";

/** At most this many requests' appends go into one statement: a whole books' turn (stream-lock.ts). */
const MOST_PER_GROUP = 128;

interface Waiting {
  appends: StreamAppend[];
  resolve(results: AppendResult[]): void;
  reject(error: unknown): void;
}

/**
 * Group commit: appends asked for while one is being written wait for it, then go together in one
 * statement (one transaction, one WAL flush, one notification), each still checked against its
 * own expected versions. Under load every request appends, and one statement for the appends of
 * many costs far less than one each; a lone append goes at once, as before.
 *
 * A group is all or nothing in the database, never for its requests: when one request's stream is
 * not where it expected, that request alone fails with the conflict and the others are written
 * again without it; any other failure is retried request by request, so each gets its own outcome.
 */
export class GroupCommit {
  private readonly queue: Waiting[] = [];
  private writing = false;

  constructor(private readonly write: (appends: StreamAppend[]) => Promise<AppendResult[]>) {}

  append(appends: StreamAppend[]): Promise<AppendResult[]> {
    return new Promise((resolve, reject) => {
      this.queue.push({ appends, resolve, reject });
      if (!this.writing) void this.drain();
    });
  }

  private async drain(): Promise<void> {
    this.writing = true;
    while (this.queue.length > 0) {
      const group = this.queue.splice(0, MOST_PER_GROUP);
      // commit settles every request itself; this only guards the queue against a bug in it.
      await this.commit(group).catch((error) => {
        for (const waiting of group) waiting.reject(error);
      });
    }
    this.writing = false;
  }

  private async commit(group: Waiting[]): Promise<void> {
    let pending = group;
    while (pending.length > 0) {
      try {
        const results = await this.write(pending.flatMap((waiting) => waiting.appends));
        let next = 0;
        for (const waiting of pending) {
          waiting.resolve(results.slice(next, next + waiting.appends.length));
          next += waiting.appends.length;
        }
        return;
      } catch (error) {
        if (pending.length === 1) {
          pending[0]?.reject(error);
          return;
        }
        const refused =
          error instanceof WrongExpectedVersionError
            ? pending.find((waiting) => waiting.appends.some((a) => a.streamId === error.streamId))
            : undefined;
        if (!refused || duplicated(pending, error as WrongExpectedVersionError)) {
          for (const waiting of pending) await this.commit([waiting]);
          return;
        }
        refused.reject(error);
        pending = pending.filter((waiting) => waiting !== refused);
      }
    }
  }
}

/** Two requests of the group append to the refused stream: which one the conflict is for is unknown. */
function duplicated(group: Waiting[], error: WrongExpectedVersionError): boolean {
  return group.filter((waiting) => waiting.appends.some((a) => a.streamId === error.streamId)).length > 1;
}
