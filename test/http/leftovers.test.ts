import { mkdirSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { blobKey } from "../../src/blobs/keys.js";
import { SMALL_BLOB_BYTES } from "../../src/blobs/port.js";
import { newTransferId } from "../../src/command-handlers/transfers/upload.js";
import { startTestApp, type TestApp } from "../support/app.js";
import {
  blobFiles,
  bytes,
  newParties,
  presignedOk,
  sendTransfer,
  tempFiles,
  transferDirs,
} from "./transfer-helpers.js";

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => t.close());

const blobRoot = () => join(t.service.config.dataDir, "blobs");

/** A blob file written `ageMs` ago, as a crashed upload would have left it. */
function leaveBlob(transferId: string, ageMs: number): void {
  const dir = join(blobRoot(), "transfers", transferId);
  mkdirSync(dir, { recursive: true });
  const path = join(dir, "f_leftover0000000");
  writeFileSync(path, "left behind");
  const when = new Date(Date.now() - ageMs);
  utimesSync(path, when, when);
}

describe("crash leftovers in the blob store (finding 5)", () => {
  it("removes abandoned .part files and blobs whose transfer the log does not have", async () => {
    mkdirSync(join(blobRoot(), ".tmp"), { recursive: true });
    writeFileSync(join(blobRoot(), ".tmp", "crashed.part"), "half");
    const orphan = newTransferId();
    leaveBlob(orphan, 10 * 60_000);
    const swept = await t.service.housekeeper.sweepLeftovers();
    expect(swept).toEqual({ parts: 1, orphans: 1 });
    expect(tempFiles(t)).toEqual([]);
    expect(transferDirs(t)).not.toContain(orphan);
  });

  it("keeps every live transfer's blobs, a presigned transfer's included", async () => {
    const { apiKey } = await newParties(t);
    const sent = await sendTransfer(t, apiKey, [{ name: "keep.bin", data: bytes(10) }]);
    const presigned = await presignedOk(t, apiKey, [{ name: "p.bin", size: 4 }]);
    await t.service.blobs.put(
      blobKey(presigned.id, presigned.upload_urls[0]?.file_id as string),
      stream("data"),
      {
        maxBytes: 4,
      },
    );
    await t.service.housekeeper.sweepLeftovers();
    expect(blobFiles(t, sent.id)).toHaveLength(1);
    expect(blobFiles(t, presigned.id)).toHaveLength(1);
  });

  it("never touches an upload in progress, nor blobs this process wrote within the grace period", async () => {
    const transferId = newTransferId();
    const body = new PassThrough();
    const putting = t.service.blobs.put(blobKey(transferId, "f_inprogress00000"), body, { maxBytes: null });
    // Past the small-file size, so the put streams to a temporary file (a smaller one waits in memory).
    body.write(Buffer.alloc(SMALL_BLOB_BYTES + 1));
    await new Promise((resolve) => setTimeout(resolve, 50));
    const fresh = newTransferId();
    leaveBlob(fresh, 0);
    expect(tempFiles(t)).toHaveLength(1);
    expect(await t.service.housekeeper.sweepLeftovers()).toEqual({ parts: 0, orphans: 0 });
    expect(tempFiles(t)).toHaveLength(1);
    body.end("last bytes");
    await putting;
    expect(blobFiles(t, transferId)).toHaveLength(1);
    expect(blobFiles(t, fresh)).toHaveLength(1);
  });
});

function stream(text: string): PassThrough {
  const body = new PassThrough();
  body.end(text);
  return body;
}
