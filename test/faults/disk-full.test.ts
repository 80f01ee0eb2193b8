import { randomBytes } from "node:crypto";
import { closeSync, openSync, rmSync, writeSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ADMIN_TOKEN } from "../support/app.js";
import { freshPostgres, postgresServer, tempDir, titled } from "../support/databases.js";
import { ServerProcess } from "../support/server-process.js";
import {
  accountWithAgents,
  call,
  filesUnder,
  isCut,
  lostOrChanged,
  mountTmpfs,
  tmpfsSkipReason,
  upload,
} from "./support.js";

const skipReason = tmpfsSkipReason();

/** Writes `path` until the disk it is on has no block left. */
function fillDisk(path: string): void {
  const fd = openSync(path, "w");
  const block = Buffer.alloc(64 * 1024);
  try {
    for (;;) writeSync(fd, block);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOSPC") throw error;
  } finally {
    closeSync(fd);
  }
}
const MiB = 1024 * 1024;

/**
 * Issue 20, point 4: the blob disk fills up (a 12 MiB tmpfs mounted on DATA_DIR/blobs). An upload
 * that does not fit answers 507 INSUFFICIENT_STORAGE, leaves nothing half-written, and the
 * transfers stored before stay whole; /readyz reports free space under MIN_FREE_DISK_MB.
 */
describe.skipIf(skipReason !== "")(titled("a full blob disk", skipReason), () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterAll(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
  });

  it("answers 507, keeps earlier transfers whole, and /readyz reports the low space", async () => {
    const dir = tempDir("handoff-faults-disk-");
    cleanups.push(() => dir.remove());
    const blobs = join(dir.path, "blobs");
    const disk = mountTmpfs(blobs, 12);
    cleanups.push(() => disk.unmount());
    const database = postgresServer ? await freshPostgres(postgresServer) : null;
    if (database) cleanups.push(() => database.drop());
    const server = await ServerProcess.start(
      {
        DATA_DIR: dir.path,
        ADMIN_TOKEN,
        MIN_FREE_DISK_MB: "4",
        ...(database ? { DATABASE_URL: database.url } : {}),
      },
      { readyTimeoutMs: 300_000 },
    );
    cleanups.push(() => server.kill("SIGTERM"));
    const apiKey = await accountWithAgents(server.baseUrl);

    const first = [randomBytes(6 * MiB), randomBytes(1000)];
    const stored = await upload(server.baseUrl, apiKey, first);
    if (isCut(stored)) throw new Error(`first upload cut: ${stored.cut}`);
    expect(stored.status).toBe(201);
    const before = filesUnder(blobs).filter((name) => name.startsWith("transfers/"));

    // 6 MiB more does not fit in what is left of 12.
    const refused = await upload(server.baseUrl, apiKey, [randomBytes(1000), randomBytes(6 * MiB)]);
    expect(
      isCut(refused)
        ? refused.cut
        : { status: refused.status, code: (refused.body.error as { code: string }).code },
    ).toEqual({
      status: 507,
      code: "INSUFFICIENT_STORAGE",
    });
    // Nothing of it is left: no temporary file, no stored first file, no transfer.
    expect(filesUnder(blobs).filter((name) => !name.startsWith(".tmp/owners/"))).toEqual(before);
    const listed = await call(server.baseUrl, "GET", "/v1/transfers", apiKey);
    expect(isCut(listed) ? listed.cut : (listed.body.transfers as unknown[]).length).toBe(1);

    // About 6 MiB used of 12: under a floor of 4 MiB free once 3 more are stored.
    expect(
      await lostOrChanged(server.baseUrl, [{ id: stored.body.id as string, apiKey, files: first }]),
    ).toEqual([]);
    const more = await upload(server.baseUrl, apiKey, [randomBytes(3 * MiB)]);
    expect(isCut(more) ? more.cut : more.status).toBe(201);
    const ready = await call(server.baseUrl, "GET", "/readyz", "");
    expect(isCut(ready) ? ready.cut : ready.status).toBe(503);
    expect(isCut(ready) ? [] : (ready.body.error as { details: unknown[] }).details).toContainEqual({
      path: "blob_store",
      message: expect.stringContaining("under the floor of 4.0 MiB (MIN_FREE_DISK_MB)"),
    });

    // A small file is written whole by the store's file threads: with the disk filled to the last
    // block, it is refused the same way, and nothing of it is left.
    const filler = join(blobs, "filler");
    fillDisk(filler);
    cleanups.push(() => rmSync(filler, { force: true }));
    const full = filesUnder(blobs).filter((name) => !name.startsWith(".tmp/owners/"));
    const small = await upload(server.baseUrl, apiKey, [randomBytes(1000)]);
    expect(
      isCut(small) ? small.cut : { status: small.status, code: (small.body.error as { code: string }).code },
    ).toEqual({ status: 507, code: "INSUFFICIENT_STORAGE" });
    expect(filesUnder(blobs).filter((name) => !name.startsWith(".tmp/owners/"))).toEqual(full);
  }, 400_000);
});
