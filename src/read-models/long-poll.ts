import type { EventEmitter } from "node:events";
import type { ProjectionEngine } from "./engine.js";

/**
 * Long-poll: runs `query` again each time the read models move, until it finds rows, `ms` pass, or
 * the client goes away (`closed` emits "close"). Never two queries at once: a move during one
 * queues exactly one more.
 */
export function waitForRows<Row>(
  engine: ProjectionEngine,
  query: () => Promise<Row[]>,
  ms: number,
  closed: EventEmitter,
): Promise<Row[]> {
  return new Promise<Row[]>((resolve, reject) => {
    let checking = false;
    let again = false;
    const end = () => {
      clearTimeout(timer);
      stop();
      closed.off("close", onClose);
    };
    const finish = (rows: Row[]) => {
      end();
      resolve(rows);
    };
    const check = async () => {
      if (checking) {
        again = true;
        return;
      }
      checking = true;
      try {
        do {
          again = false;
          const rows = await query();
          if (rows.length > 0) return finish(rows);
        } while (again);
      } catch (error) {
        end();
        reject(error);
      } finally {
        checking = false;
      }
    };
    const onClose = () => finish([]);
    const stop = engine.onAdvance(() => void check());
    const timer = setTimeout(() => finish([]), ms);
    closed.once("close", onClose);
    void check();
  });
}
