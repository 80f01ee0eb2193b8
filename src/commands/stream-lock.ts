/**
 * Runs the decisions on one stream in this process one after another. Optimistic concurrency
 * still guards the stream against other processes, but writers in this one no longer race each
 * other into conflicts and retries: 32 uploads on one account would otherwise all load, decide
 * and append against the same quota stream, and all but one start over, again and again.
 */
export interface StreamSerializer {
  run<T>(streamId: string, work: () => Promise<T>): Promise<T>;
}

export class StreamLock implements StreamSerializer {
  private readonly tails = new Map<string, Promise<unknown>>();

  run<T>(streamId: string, work: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(streamId) ?? Promise.resolve();
    const result = previous.then(work, work);
    const tail = result.catch(() => {});
    this.tails.set(streamId, tail);
    void tail.then(() => {
      if (this.tails.get(streamId) === tail) this.tails.delete(streamId);
    });
    return result;
  }
}
