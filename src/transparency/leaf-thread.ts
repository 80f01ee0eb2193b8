import { parentPort, workerData } from "node:worker_threads";
import { openDatabase } from "../db/database.js";
import { PostgresEventStore } from "../eventstore/postgres.js";
import { hashRun, type LeafRun } from "./leaf-hashes.js";

/** A leaf thread of threadHashers (leaf-hashes.ts): answers each run it is asked with its hashes. */
const { databaseUrl } = workerData as { databaseUrl: string };
const store = new PostgresEventStore(openDatabase({ kind: "postgres", url: databaseUrl }));

parentPort?.on("message", ({ id, run }: { id: number; run: LeafRun }) => {
  hashRun(store, run).then(
    (hashed) => parentPort?.postMessage({ id, run: hashed }, [hashed.hashes.buffer as ArrayBuffer]),
    (error: unknown) => parentPort?.postMessage({ id, error: String(error) }),
  );
});
