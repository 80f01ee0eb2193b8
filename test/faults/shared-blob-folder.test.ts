import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ADMIN_TOKEN } from "../support/app.js";
import { freshPostgres, postgresServer, postgresSkipReason, tempDir, titled } from "../support/databases.js";
import { ServerProcess } from "../support/server-process.js";
import { accountWithAgents, downloadAll, filesUnder, isCut, type Outcome, sleep, upload } from "./support.js";

const FILE_BYTES = 3 * 1024 * 1024;

/** Waits until `ready()` holds, or fails after `ms` naming `what`. */
async function until(ready: () => boolean, what: string, ms = 30_000): Promise<void> {
  for (const deadline = Date.now() + ms; !ready(); await sleep(50)) {
    if (Date.now() > deadline) throw new Error(`${what} did not happen within ${ms} ms`);
  }
}

/**
 * Issue 20, point 1: two instances on one PostgreSQL database and one blob folder. Instance A
 * restarts (its start-up sweep of crash leftovers runs) while B is in the middle of multi-file
 * uploads: one file already stored, the next one in a temporary file. Every upload B acknowledges
 * must come back byte for byte.
 */
describe.skipIf(!postgresServer)(titled("two instances sharing one blob folder", postgresSkipReason), () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterAll(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
  });

  it("a restart of one instance mid-upload on the other loses no acknowledged file", async () => {
    const database = await freshPostgres(postgresServer as string);
    const dir = tempDir("handoff-faults-shared-");
    cleanups.push(
      () => database.drop(),
      () => dir.remove(),
    );
    const env = { DATABASE_URL: database.url, DATA_DIR: dir.path, ADMIN_TOKEN };
    let a = await ServerProcess.start(env, { readyTimeoutMs: 120_000 });
    cleanups.push(() => a.kill("SIGTERM"));
    const b = await ServerProcess.start(env, { readyTimeoutMs: 120_000 });
    cleanups.push(() => b.kill("SIGTERM"));
    const apiKey = await accountWithAgents(a.baseUrl);

    const blobs = join(dir.path, "blobs");
    const stored = () => filesUnder(join(blobs, "transfers")).length;
    const staging = () => filesUnder(join(blobs, ".tmp")).filter((name) => name.endsWith(".part")).length;

    let release = () => {};
    const restarted = new Promise<void>((resolve) => {
      release = resolve;
    });
    const uploads = [0, 1].map(() => [
      randomBytes(FILE_BYTES),
      randomBytes(FILE_BYTES),
      randomBytes(FILE_BYTES),
    ]);
    const outcomes: Promise<Outcome>[] = uploads.map((files) =>
      upload(b.baseUrl, apiKey, files, {
        // Each upload holds after its second file has begun: file 1 stored, file 2 in .tmp.
        betweenFiles: async (index) => {
          if (index === 2) await restarted;
        },
        chunk: 64 * 1024,
      }),
    );
    // Both uploads have a stored file and a temporary one (the second file's first bytes).
    await until(() => stored() >= 2 && staging() >= 2, "two stored files and two temporary ones");
    const before = { stored: stored(), staging: staging() };

    await a.kill("SIGTERM");
    a = await ServerProcess.start(env, { readyTimeoutMs: 120_000 });
    // The start-up sweep runs as the housekeeper starts; give it a moment past readiness.
    await sleep(1500);
    expect({ stored: stored(), staging: staging() }, "A's sweep left B's files alone").toEqual(before);
    release();

    const answers = await Promise.all(outcomes);
    for (const [index, answer] of answers.entries()) {
      if (isCut(answer)) throw new Error(`upload ${index} cut: ${answer.cut}`);
      expect(answer.status, JSON.stringify(answer.body)).toBe(201);
      const id = answer.body.id as string;
      // Through both instances: they share the folder and the database.
      for (const server of [a, b]) {
        const back = await downloadAll(server.baseUrl, apiKey, id);
        expect(back.map((file) => file.length)).toEqual(uploads[index]?.map((file) => file.length));
        expect(back.every((file, i) => file.equals(uploads[index]?.[i] as Buffer))).toBe(true);
      }
    }
  }, 300_000);
});
