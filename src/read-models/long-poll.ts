import type { EventEmitter } from "node:events";
import type { ProjectionEngine } from "./engine.js";

/**
 * Runs `check` now and again each time the read models move (on this instance, or on another one
 * whose append this instance heard through LISTEN/NOTIFY), until the returned stop is called or
 * `check` throws (then `onError`, and no more checks). Never two checks at once: a move during
 * one queues exactly one more. The long-poll and the inbox event stream both wait this way.
 */
export function followReadModels(
  engine: ProjectionEngine,
  check: () => Promise<void>,
  onError: (error: unknown) => void,
): () => void {
  let checking = false;
  let again = false;
  let stopped = false;
  const stop = () => {
    stopped = true;
    unsubscribe();
  };
  const run = async () => {
    if (checking) {
      again = true;
      return;
    }
    checking = true;
    try {
      do {
        again = false;
        await check();
      } while (again && !stopped);
    } catch (error) {
      stop();
      onError(error);
    } finally {
      checking = false;
    }
  };
  const unsubscribe = engine.onAdvance(() => void run());
  void run();
  return stop;
}

/**
 * Long-poll: runs `query` again each time the read models move, until it finds rows, `ms` pass, or
 * the client goes away (`closed` emits "close").
 */
export function waitForRows<Row>(
  engine: ProjectionEngine,
  query: () => Promise<Row[]>,
  ms: number,
  closed: EventEmitter,
): Promise<Row[]> {
  return new Promise<Row[]>((resolve, reject) => {
    const end = () => {
      clearTimeout(timer);
      stop();
      closed.off("close", onClose);
    };
    const finish = (rows: Row[]) => {
      end();
      resolve(rows);
    };
    const onClose = () => finish([]);
    const timer = setTimeout(() => finish([]), ms);
    closed.once("close", onClose);
    const stop = followReadModels(
      engine,
      async () => {
        const rows = await query();
        if (rows.length > 0) finish(rows);
      },
      (error) => {
        end();
        reject(error);
      },
    );
  });
}
