import { createHash, randomBytes } from "node:crypto";
import { once } from "node:events";
import { PassThrough } from "node:stream";
import { Upload } from "tus-js-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestApp, type TestApp } from "../support/app.js";
import { postgresServer } from "../support/databases.js";
import { startS3Store, type TestS3Store } from "../support/s3-server.js";
import { freePort } from "../support/server-process.js";
import { advanceClock } from "./helpers.js";
import { confirm, downloadOk, MiB, newParties, presignedOk } from "./transfer-helpers.js";

const sha256 = (data: Buffer) => createHash("sha256").update(data).digest("hex");
const TUS = { "tus-resumable": "1.0.0" };

/** A transfer's app listening on a real port (tus-js-client speaks real HTTP), on either store. */
async function listening(s3: TestS3Store | null): Promise<TestApp> {
  const port = await freePort();
  const t = await startTestApp({
    // PostgreSQL where there is one: embedded PGlite starts slowly on a loaded machine.
    database: postgresServer ? "postgres" : "pglite",
    env: {
      PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
      ...s3?.env,
    },
  });
  await t.app.listen({ port, host: "127.0.0.1" });
  return t;
}

function tusUpload(
  data: Buffer,
  url: string,
  handlers: Partial<ConstructorParameters<typeof Upload>[1]> = {},
) {
  return new Upload(data, {
    uploadUrl: url,
    uploadSize: data.length,
    retryDelays: [0, 100, 200],
    storeFingerprintForResuming: false,
    ...handlers,
  });
}

/**
 * A tus-js-client file reader whose PATCH body stops after `bytes`: the request stays in flight,
 * mid-body, and `onStalled` runs once those bytes have gone on to the connection.
 */
function stallingAfter(data: Buffer, bytes: number, onStalled: () => void) {
  return {
    openFile: async () => ({
      size: data.length,
      slice: async (start: number, end: number) => {
        const body = Object.assign(new PassThrough(), { size: end - start });
        const stop = Math.min(end, start + bytes);
        void (async () => {
          // In small writes, so that the last one is taken only when the others have gone on.
          for (let at = start; at < stop; at += 64 * 1024) {
            if (!body.write(data.subarray(at, Math.min(stop, at + 64 * 1024)))) await once(body, "drain");
          }
          onStalled();
        })();
        return { value: body, done: false };
      },
      close: () => {},
    }),
  };
}

/** Runs a tus upload to its end; rejects with its error. */
function uploadToEnd(data: Buffer, url: string): Promise<void> {
  return new Promise((resolve, reject) => {
    tusUpload(data, url, { onSuccess: () => resolve(), onError: reject }).start();
  });
}

async function fetchAll(url: string): Promise<Buffer> {
  const response = await fetch(url);
  expect(response.status).toBe(200);
  return Buffer.from(await response.arrayBuffer());
}

async function errorOf(response: Response): Promise<{ code: string; status: number }> {
  expect(response.headers.get("tus-resumable")).toBe("1.0.0");
  return ((await response.json()) as { error: { code: string; status: number } }).error;
}

for (const store of ["filesystem", "S3 (s3rver)"] as const) {
  describe(`tus on resumable_url, ${store} store`, () => {
    let s3: TestS3Store | null = null;
    let t: TestApp;
    let apiKey: string;
    beforeAll(async () => {
      if (store !== "filesystem") s3 = await startS3Store();
      t = await listening(s3);
      ({ apiKey } = await newParties(t, "builder"));
    });
    afterAll(async () => {
      await t?.close();
      await s3?.stop();
    });

    async function presigned(files: { name: string; size: number }[]) {
      const body = await presignedOk(t, apiKey, files);
      return { id: body.id, items: body.upload_urls, expiresAt: body.expires_at };
    }

    it("tus-js-client aborted mid-way resumes from a new client with only the URL; confirmed and downloaded byte-exact", async () => {
      const data = randomBytes(13 * MiB + 17);
      const { id, items } = await presigned([{ name: "big.bin", size: data.length }]);
      const url = items[0]?.resumable_url as string;
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1\/uploads\//);

      await new Promise<void>((resolve, reject) => {
        // Aborted once 7 MiB are on their way, the rest of the PATCH never sent: however fast the
        // server reads, the first upload cannot finish first.
        const first = tusUpload(data, url, {
          fileReader: stallingAfter(data, 7 * MiB, () => first.abort().then(resolve, reject)),
          onSuccess: () => reject(new Error("the first upload was to be aborted")),
          onError: reject,
        });
        first.start();
      });
      // What arrived before the abort was kept.
      let head: Response;
      for (;;) {
        head = await fetch(url, { method: "HEAD", headers: TUS });
        if (head.status !== 423) break;
      }
      expect(head.status).toBe(200);
      const kept = Number(head.headers.get("upload-offset"));
      expect(kept).toBeGreaterThan(0);
      expect(kept).toBeLessThan(data.length);

      await uploadToEnd(data, url);
      expect((await confirm(t, apiKey, id)).statusCode).toBe(200);
      const download = await downloadOk(t, apiKey, id);
      const got = await fetchAll(download.files[0]?.download_url as string);
      expect({ length: got.length, sha256: sha256(got) }).toEqual({
        length: data.length,
        sha256: sha256(data),
      });
    });

    it("OPTIONS and HEAD answer what tus clients read", async () => {
      const { items, expiresAt } = await presigned([{ name: "a.bin", size: 1000 }]);
      const url = items[0]?.resumable_url as string;
      const options = await fetch(url, { method: "OPTIONS" });
      expect(options.status).toBe(204);
      expect(Object.fromEntries(options.headers)).toMatchObject({
        "tus-resumable": "1.0.0",
        "tus-version": "1.0.0",
        "tus-extension": "expiration,checksum,termination",
        "tus-max-size": "1000",
        "tus-checksum-algorithm": "sha1,sha256",
      });
      const head = await fetch(url, { method: "HEAD", headers: TUS });
      expect(head.status).toBe(200);
      expect(Object.fromEntries(head.headers)).toMatchObject({
        "tus-resumable": "1.0.0",
        "upload-offset": "0",
        "upload-length": "1000",
        "upload-expires": new Date(expiresAt).toUTCString(),
        "cache-control": "no-store",
      });
    });

    it("refuses what tus refuses: wrong offset 409, bad checksum 460 keeping nothing, over-size 413, no Tus-Resumable 412, wrong type 415", async () => {
      const data = randomBytes(4000);
      const { items } = await presigned([{ name: "b.bin", size: data.length }]);
      const url = items[0]?.resumable_url as string;
      const patch = (offset: number, body: Buffer, headers: Record<string, string> = {}) =>
        fetch(url, {
          method: "PATCH",
          headers: {
            ...TUS,
            "content-type": "application/offset+octet-stream",
            "upload-offset": String(offset),
            ...headers,
          },
          body,
        });
      const offsetNow = async () =>
        Number((await fetch(url, { method: "HEAD", headers: TUS })).headers.get("upload-offset"));

      const first = await patch(0, data.subarray(0, 1000));
      expect(first.status).toBe(204);
      expect(first.headers.get("upload-offset")).toBe("1000");
      expect(first.headers.get("tus-resumable")).toBe("1.0.0");

      const wrong = await patch(500, data.subarray(500));
      expect(wrong.status).toBe(409);
      expect(await errorOf(wrong)).toMatchObject({ code: "OFFSET_MISMATCH", status: 409 });

      const badSum = createHash("sha1").update("something else").digest("base64");
      const bad = await patch(1000, data.subarray(1000, 2000), { "upload-checksum": `sha1 ${badSum}` });
      expect(bad.status).toBe(460);
      expect(await errorOf(bad)).toMatchObject({ code: "CHECKSUM_MISMATCH", status: 460 });
      expect(await offsetNow()).toBe(1000);
      const goodSum = createHash("sha256").update(data.subarray(1000, 2000)).digest("base64");
      expect(
        (await patch(1000, data.subarray(1000, 2000), { "upload-checksum": `sha256 ${goodSum}` })).status,
      ).toBe(204);

      const over = await patch(2000, randomBytes(2001));
      expect(over.status).toBe(413);
      expect(await errorOf(over)).toMatchObject({ status: 413 });
      expect(await offsetNow()).toBe(2000);

      const untus = await fetch(url, {
        method: "PATCH",
        headers: { "content-type": "application/offset+octet-stream", "upload-offset": "2000" },
        body: data.subarray(2000),
      });
      expect(untus.status).toBe(412);
      expect(await errorOf(untus)).toMatchObject({ code: "PRECONDITION_FAILED" });
      expect((await fetch(url, { method: "HEAD" })).status).toBe(412);

      const typed = await patch(2000, data.subarray(2000), { "content-type": "application/octet-stream" });
      expect(typed.status).toBe(415);
      expect(await offsetNow()).toBe(2000);
    });

    it("DELETE terminates: HEAD then answers 404, and confirm names the file as missing", async () => {
      const { id, items } = await presigned([{ name: "c.bin", size: 3000 }]);
      const url = items[0]?.resumable_url as string;
      await fetch(url, {
        method: "PATCH",
        headers: { ...TUS, "content-type": "application/offset+octet-stream", "upload-offset": "0" },
        body: randomBytes(100),
      });
      const deleted = await fetch(url, { method: "DELETE", headers: TUS });
      expect(deleted.status).toBe(204);
      const head = await fetch(url, { method: "HEAD", headers: TUS });
      expect(head.status).toBe(404);
      const confirmed = await confirm(t, apiKey, id);
      expect(confirmed.statusCode).toBe(400);
      expect(confirmed.body).toContain("c.bin");
    });

    it("an unknown link is 404; an expired one is 410", async () => {
      const { items } = await presigned([{ name: "d.bin", size: 10 }]);
      const url = items[0]?.resumable_url as string;
      const forged = `${url.slice(0, -4)}AAAA`;
      expect((await fetch(forged, { method: "HEAD", headers: TUS })).status).toBe(404);
      await advanceClock(t, 3601);
      const expired = await fetch(url, { method: "HEAD", headers: TUS });
      expect(expired.status).toBe(410);
    });
  });
}
