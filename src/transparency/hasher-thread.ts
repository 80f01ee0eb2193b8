import { parentPort, workerData } from "node:worker_threads";
import { openDatabase } from "../db/database.js";
import { PostgresEventStore } from "../eventstore/postgres.js";
import { Checkpoints } from "./checkpoints.js";
import { inProcessHasher } from "./hasher.js";
import type { HasherThreadData, ThreadReply, ThreadRequest } from "./threaded-hasher.js";
import { TileReader } from "./tiles.js";

/**
 * The log's hasher on a thread of its own (ThreadHasher, threaded-hasher.ts): a LogHasher over a
 * connection pool and an event store of this thread's own, which hears the service's appends as
 * another instance's would (LISTEN). Requests run one after another, in the order sent.
 */
const { databaseUrl, origin, seed } = workerData as HasherThreadData;
const db = openDatabase({ kind: "postgres", url: databaseUrl });
const store = new PostgresEventStore(db, { listenUrl: databaseUrl });
const reply = (message: ThreadReply) => parentPort?.postMessage(message);
const asText = (error: unknown) => (error instanceof Error ? (error.stack ?? error.message) : String(error));
const hasher = inProcessHasher(store, db, new TileReader(db), new Checkpoints(db, origin, seed), (error) =>
  reply({ report: asText(error) }),
);

const operations = {
  async start() {
    await store.open();
    await hasher.start();
  },
  signNow: () => hasher.signNow(),
  async stop() {
    await hasher.stop();
    await store.close();
    await db.destroy();
  },
};

let turn: Promise<unknown> = Promise.resolve();
parentPort?.on("message", (request: ThreadRequest) => {
  if (request.op === "gate") return hasher.gateSigning(request.open);
  const { id, op } = request;
  turn = turn.then(operations[op]).then(
    () => reply({ id }),
    (error: unknown) => reply({ id, error: asText(error) }),
  );
});
