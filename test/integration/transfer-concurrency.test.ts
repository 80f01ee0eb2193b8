import { randomBytes } from "node:crypto";
import { setTimeout as delay } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WrongExpectedVersionError } from "../../src/eventstore/port.js";
import { randomPublicKey, startTestApp, type TestApp } from "../support/app.js";
import { postgresServer, postgresSkipReason, titled } from "../support/databases.js";

/** A multipart/form-data body built by hand: the text fields, then one part per file. */
function multipart(fields: Record<string, string>, files: { name: string; data: Buffer; type?: string }[]) {
  const boundary = `----handoff-${randomBytes(12).toString("hex")}`;
  const parts: Buffer[] = [];
  for (const [name, value] of Object.entries(fields)) {
    parts.push(
      Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`),
    );
  }
  for (const file of files) {
    parts.push(
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="files"; filename="${file.name}"\r\n` +
          `Content-Type: ${file.type ?? "application/octet-stream"}\r\n\r\n`,
      ),
      file.data,
      Buffer.from("\r\n"),
    );
  }
  parts.push(Buffer.from(`--${boundary}--\r\n`));
  return { payload: Buffer.concat(parts), contentType: `multipart/form-data; boundary=${boundary}` };
}

async function registerAgent(t: TestApp, apiKey: string, slug: string): Promise<void> {
  const res = await t.call("POST", "/v1/agents/register", {
    key: apiKey,
    body: { agent_id: slug, public_key: randomPublicKey() },
  });
  expect(res.statusCode, res.body).toBe(201);
}

/**
 * Runs `run` and counts the appends the event store refuses for a stale expected version meanwhile:
 * proof that the parallel requests really raced for one stream rather than running one after the
 * other. `holdReadsMs` keeps each stream read waiting that long before it answers, so that requests
 * which would otherwise run back to back (PGlite runs one request's queries almost at once, on its
 * one connection) overlap: every decision is then made on a state others are about to change.
 */
async function countingConflicts<T>(
  t: TestApp,
  holdReadsMs: number,
  run: () => Promise<T>,
): Promise<{ result: T; conflicts: number }> {
  const store = t.service.store;
  const { appendMany, readStream, readStreams } = store;
  let conflicts = 0;
  store.appendMany = async (appends) => {
    try {
      return await appendMany.call(store, appends);
    } catch (error) {
      if (error instanceof WrongExpectedVersionError) conflicts++;
      throw error;
    }
  };
  if (holdReadsMs > 0) {
    store.readStream = async (streamId, fromRevision) => {
      const events = await readStream.call(store, streamId, fromRevision);
      await delay(holdReadsMs);
      return events;
    };
    store.readStreams = async (reads) => {
      const events = await readStreams.call(store, reads);
      await delay(holdReadsMs);
      return events;
    };
  }
  try {
    return { result: await run(), conflicts };
  } finally {
    store.appendMany = appendMany;
    store.readStream = readStream;
    store.readStreams = readStreams;
  }
}

/** POST /v1/transfers of one file from the account's agent "sender" to its agent "receiver". */
function sendFile(
  t: TestApp,
  apiKey: string,
  maxDownloads: number,
  file: { name: string; data: Buffer; type?: string },
) {
  const form = multipart(
    { mode: "agent-to-agent", sender: "sender", recipient: "receiver", max_downloads: String(maxDownloads) },
    [file],
  );
  return t.app.inject({
    method: "POST",
    url: "/v1/transfers",
    headers: { authorization: `Bearer ${apiKey}`, "content-type": form.contentType },
    payload: form.payload,
  });
}

/**
 * Within one process the decisions on a stream take turns (StreamLock). Here each request acts as
 * if it came from a process of its own, so they race, and only the event store's expected version
 * keeps the outcome exact.
 */
async function asSeparateProcesses<T>(t: TestApp, run: () => Promise<T>): Promise<T> {
  const lock = t.service.transferDeps.streamLock;
  t.service.transferDeps.streamLock = {
    run: (_stream, work) => work(),
    together: async (_stream, item, decideAll) => {
      const [outcome] = await decideAll([item]);
      if (!outcome?.ok) throw outcome?.error;
      return outcome.value;
    },
  };
  try {
    return await run();
  } finally {
    t.service.transferDeps.streamLock = lock;
  }
}

/** Counts of each status code, e.g. {200: 5, 410: 35}. */
function tally(statuses: number[]): Record<number, number> {
  const counts: Record<number, number> = {};
  for (const status of statuses) counts[status] = (counts[status] ?? 0) + 1;
  return counts;
}

/**
 * Decisions 3.14 and the download counter: a limit holds however many requests race for it,
 * because the transfer's stream and the account's quota stream are appended with an expected
 * version, not checked against a read model. On PostgreSQL the app's connection pool gives
 * real parallelism; on PGlite, whose one connection would run the requests nearly one after the
 * other, stream reads are held a few milliseconds so that the requests overlap. Either way the
 * tests check that the appends really collided.
 */
for (const database of ["pglite", "postgres"] as const) {
  const skip = database === "postgres" && !postgresServer;
  describe.skipIf(skip)(
    titled(
      `parallel downloads and uploads on ${database}`,
      database === "postgres" ? postgresSkipReason : "",
    ),
    () => {
      const holdReadsMs = database === "pglite" ? 5 : 0;
      let t: TestApp;
      beforeAll(async () => {
        t = await startTestApp({ database });
      });
      afterAll(async () => t?.close());

      it("serves exactly max_downloads of 40 parallel downloads and answers 410 GONE to the rest", async () => {
        const { apiKey, accountId } = await t.newAccount("team");
        await registerAgent(t, apiKey, "sender");
        await registerAgent(t, apiKey, "receiver");
        // The download endpoint allows 30 requests a minute per API key (spec section 8): spread
        // the 40 over two keys of the account, so every refusal below is the download limit's.
        const second = await t.call("POST", `/v1/accounts/${accountId}/api-keys`, {
          key: apiKey,
          body: { name: "second" },
        });
        expect(second.statusCode, second.body).toBe(201);
        const keys = [apiKey, second.json().api_key as string];

        const created = await sendFile(t, apiKey, 5, {
          name: "report.txt",
          data: Buffer.from("five downloads, no more"),
          type: "text/plain",
        });
        expect(created.statusCode, created.body).toBe(201);
        const id = created.json().id as string;
        expect(created.json()).toMatchObject({ status: "active", max_downloads: 5, downloads: 0 });

        const { result: responses, conflicts } = await asSeparateProcesses(t, () =>
          countingConflicts(t, holdReadsMs, () =>
            Promise.all(
              Array.from({ length: 40 }, (_, i) =>
                t.call("GET", `/v1/transfers/${id}/download`, { key: keys[i % 2] }),
              ),
            ),
          ),
        );
        expect(conflicts, "the downloads never raced for the transfer's stream").toBeGreaterThan(0);
        expect(tally(responses.map((r) => r.statusCode))).toEqual({ 200: 5, 410: 35 });
        for (const r of responses.filter((r) => r.statusCode === 410)) {
          expect(r.json()).toEqual({ error: { code: "GONE", message: expect.any(String), status: 410 } });
        }
        // Each served download saw its own count: 1 to 5, each once.
        const served = responses.filter((r) => r.statusCode === 200).map((r) => r.json());
        expect(served.map((body) => body.downloads).sort()).toEqual([1, 2, 3, 4, 5]);
        expect(served.map((body) => body.downloads_remaining).sort()).toEqual([0, 1, 2, 3, 4]);

        const read = await t.call("GET", `/v1/transfers/${id}`, { key: apiKey });
        expect(read.statusCode, read.body).toBe(200);
        expect(read.json()).toMatchObject({ downloads: 5, max_downloads: 5, status: "downloaded" });

        const events = await t.service.store.readStream(`transfer-${id}`);
        expect(events.filter((e) => e.type === "DownloadRecorded")).toHaveLength(5);
        expect(events.filter((e) => e.type === "DownloadRecorded").map((e) => e.data.downloads)).toEqual([
          1, 2, 3, 4, 5,
        ]);
        expect(events.filter((e) => e.type === "TransferDownloaded")).toHaveLength(1);
      });

      it("records one-time transfers' creates and last downloads on one account's books without a conflict", async () => {
        const { apiKey, accountId } = await t.newAccount("team");
        await registerAgent(t, apiKey, "sender");
        await registerAgent(t, apiKey, "receiver");
        const data = Buffer.from("read once, gone");
        const send = async () => {
          const res = await sendFile(t, apiKey, 1, { name: "once.txt", data });
          expect(res.statusCode, res.body).toBe(201);
          return res.json().id as string;
        };
        const first = await Promise.all(Array.from({ length: 12 }, send));

        // Each download is its transfer's last: it releases the storage on the books the creates
        // beside it count on. In one process they take the books' turns, so none starts over.
        const { result, conflicts } = await countingConflicts(t, holdReadsMs, () =>
          Promise.all([
            ...first.map((id) => t.call("GET", `/v1/transfers/${id}/download`, { key: apiKey })),
            ...Array.from({ length: 12 }, send),
          ]),
        );
        const downloads = result.slice(0, first.length) as { statusCode: number }[];
        expect(tally(downloads.map((r) => r.statusCode))).toEqual({ 200: 12 });
        expect(conflicts, "creates and releases raced for the books").toBe(0);

        const books = await t.service.store.readStream(`usage-${accountId}`);
        expect(books.filter((e) => e.type === "TransferCounted")).toHaveLength(24);
        const released = books.filter((e) => e.type === "StorageReleased").map((e) => e.data.transferId);
        expect(released.sort()).toEqual([...first].sort());
        const held = books.reduce(
          (sum, e) => sum + (e.type === "TransferCounted" ? 1 : -1) * Number(e.data.bytes),
          0,
        );
        expect(held).toBe(12 * data.length);
      });

      it("decides the creates and releases of several accounts in one books' turn, each on its own books", async () => {
        const accounts = await Promise.all(Array.from({ length: 4 }, () => t.newAccount("team")));
        for (const { apiKey } of accounts) {
          await registerAgent(t, apiKey, "sender");
          await registerAgent(t, apiKey, "receiver");
        }
        const data = Buffer.from("one turn for every account");
        const send = async (apiKey: string) => {
          const res = await sendFile(t, apiKey, 1, { name: "once.txt", data });
          expect(res.statusCode, res.body).toBe(201);
          return res.json().id as string;
        };
        const first = await Promise.all(accounts.map(({ apiKey }) => send(apiKey)));

        // Every append waits a little before it is written, so that what arrives meanwhile, on
        // any account, queues for the next turn.
        const store = t.service.store;
        const { appendMany } = store;
        const booksPerAppend: number[] = [];
        store.appendMany = async (appends) => {
          booksPerAppend.push(appends.filter((a) => a.streamId.startsWith("usage-")).length);
          await delay(50);
          return appendMany.call(store, appends);
        };
        try {
          const { result, conflicts } = await countingConflicts(t, 0, () =>
            Promise.all([
              ...first.map((id, i) =>
                t.call("GET", `/v1/transfers/${id}/download`, { key: accounts[i]?.apiKey }),
              ),
              ...accounts.flatMap(({ apiKey }) => Array.from({ length: 3 }, () => send(apiKey))),
            ]),
          );
          const downloads = result.slice(0, first.length) as { statusCode: number }[];
          expect(tally(downloads.map((r) => r.statusCode))).toEqual({ 200: 4 });
          expect(conflicts).toBe(0);
        } finally {
          store.appendMany = appendMany;
        }
        expect(
          Math.max(...booksPerAppend),
          "no append carried the books of several accounts",
        ).toBeGreaterThan(1);

        for (const [i, { accountId }] of accounts.entries()) {
          const books = await t.service.store.readStream(`usage-${accountId}`);
          expect(books.filter((e) => e.type === "TransferCounted")).toHaveLength(4);
          const released = books.filter((e) => e.type === "StorageReleased").map((e) => e.data.transferId);
          expect(released).toEqual([first[i]]);
        }
      });

      it("lets 20 parallel presigned creations take exactly the 5 transfers left of a free month", async () => {
        const { apiKey, accountId } = await t.newAccount("free");
        await registerAgent(t, apiKey, "sender");
        await registerAgent(t, apiKey, "receiver");
        const presigned = (n: number) =>
          t.call("POST", "/v1/transfers/presigned", {
            key: apiKey,
            body: {
              mode: "agent-to-agent",
              sender: "sender",
              recipient: "receiver",
              files: [{ name: `file-${n}.bin`, size: 1024 }],
            },
          });

        for (let n = 0; n < 45; n++) {
          const res = await presigned(n);
          expect(res.statusCode, res.body).toBe(201);
        }

        const { result: responses, conflicts } = await asSeparateProcesses(t, () =>
          countingConflicts(t, holdReadsMs, () =>
            Promise.all(Array.from({ length: 20 }, (_, i) => presigned(45 + i))),
          ),
        );
        expect(conflicts, "the creations never raced for the quota stream").toBeGreaterThan(0);
        expect(tally(responses.map((r) => r.statusCode))).toEqual({ 201: 5, 403: 15 });
        for (const r of responses.filter((r) => r.statusCode === 403)) {
          expect(r.json()).toEqual({
            error: { code: "QUOTA_EXCEEDED", message: expect.any(String), status: 403 },
          });
        }

        const list = await t.call("GET", "/v1/transfers?direction=sent&limit=1", { key: apiKey });
        expect(list.statusCode, list.body).toBe(200);
        expect(list.json().total).toBe(50);
        const usage = await t.service.store.readStream(`usage-${accountId}`);
        expect(usage.filter((e) => e.type === "TransferCounted")).toHaveLength(50);
        // The month is used up: one more, even alone, is refused.
        const after = await presigned(99);
        expect(after.statusCode, after.body).toBe(403);
        expect(after.json().error.code).toBe("QUOTA_EXCEEDED");
      });
    },
  );
}
