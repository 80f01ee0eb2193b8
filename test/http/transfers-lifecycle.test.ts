import { PassThrough } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestApp, type TestApp } from "../support/app.js";
import { advanceClock, detailPaths, expectError, registerAgent } from "./helpers.js";
import {
  A2A,
  blobFiles,
  bytes,
  download,
  downloadOk,
  expectTransferShape,
  FREE,
  fetchLink,
  getTransfer,
  listTransfers,
  newParties,
  type PresignedBody,
  pathOf,
  postTransfer,
  presignedActive,
  presignedOk,
  sendTransfer,
  type TransferBody,
  waitUntil,
  withoutHousekeeper,
} from "./transfer-helpers.js";

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => t.close());

const MINUTE = 60;
const UNKNOWN_ID = "tr_AAAAAAAAAAAAAAAAAAAAAAAA";
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const file = (name = "f.txt", text = "payload") => ({ name, data: Buffer.from(text), type: "text/plain" });

/** One housekeeping pass now, so "the data is still there" is checked after a sweep, not before it. */
const sweep = () => t.service.housekeeper.sweep();

const deleteTransfer = (key: string, id: string) => t.call("DELETE", `/v1/transfers/${id}`, { key });

interface InboxBody {
  transfers: TransferBody[];
  next_cursor: string | null;
  has_more: boolean;
}
const inbox = (key: string, query = "", agent?: string) =>
  t.call("GET", `/v1/transfers/inbox${query ? `?${query}` : ""}`, {
    key,
    ...(agent ? { headers: { "x-service-agent": agent } } : {}),
  });
async function inboxOk(key: string, query = "", agent?: string): Promise<InboxBody> {
  const res = await inbox(key, query, agent);
  expect(res.statusCode, res.body).toBe(200);
  const body = res.json() as InboxBody;
  expect(Object.keys(body).sort()).toEqual(["has_more", "next_cursor", "transfers"]);
  return body;
}

/** bob → alice, agent-to-agent. */
const toAlice = { sender: "bob", recipient: "alice" };

describe("GET /v1/transfers/{id}", () => {
  it("never changes the download counter", async () => {
    const { apiKey } = await newParties(t);
    const sent = await sendTransfer(t, apiKey, [file()], { max_downloads: "2" });
    for (let index = 0; index < 3; index++) {
      const res = await getTransfer(t, apiKey, sent.id);
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual(sent);
    }
    await downloadOk(t, apiKey, sent.id);
    for (let index = 0; index < 3; index++) {
      const got = (await getTransfer(t, apiKey, sent.id)).json() as TransferBody;
      expectTransferShape(got);
      expect(got.downloads).toBe(1);
      expect(got.status).toBe("active");
    }
    expect((await downloadOk(t, apiKey, sent.id)).downloads).toBe(2);
  });

  it("404 for another account's transfer, an unknown id, a malformed id and a deleted transfer", async () => {
    const { apiKey } = await newParties(t);
    const stranger = await t.newAccount();
    const sent = await sendTransfer(t, apiKey, [file()]);
    expectError(await getTransfer(t, stranger.apiKey, sent.id), 404, "NOT_FOUND");
    expectError(await download(t, stranger.apiKey, sent.id), 404, "NOT_FOUND");
    expectError(await deleteTransfer(stranger.apiKey, sent.id), 404, "NOT_FOUND");
    expectError(await getTransfer(t, apiKey, UNKNOWN_ID), 404, "NOT_FOUND");
    expectError(await getTransfer(t, apiKey, "not-a-transfer"), 404, "NOT_FOUND");
    expectError(await getTransfer(t, apiKey, `${sent.id}x`), 404, "NOT_FOUND");
    // The stranger's attempts changed nothing.
    expect((await getTransfer(t, apiKey, sent.id)).json()).toEqual(sent);
    expect((await deleteTransfer(apiKey, sent.id)).statusCode).toBe(200);
    expectError(await getTransfer(t, apiKey, sent.id), 404, "NOT_FOUND");
  });

  it("401 without a key", async () => {
    expectError(await t.call("GET", `/v1/transfers/${UNKNOWN_ID}`), 401, "UNAUTHORIZED");
    expectError(await t.call("GET", `/v1/transfers/${UNKNOWN_ID}/download`), 401, "UNAUTHORIZED");
    expectError(await t.call("DELETE", `/v1/transfers/${UNKNOWN_ID}`), 401, "UNAUTHORIZED");
    expectError(await t.call("GET", "/v1/transfers"), 401, "UNAUTHORIZED");
    expectError(await t.call("GET", "/v1/transfers/inbox"), 401, "UNAUTHORIZED");
  });

  it("the recipient side sees it too: as received, and in the recipient agent's inbox", async () => {
    // Cross-account sends need account connections, which are not built yet: the recipient side is
    // the recipient agent on the same account.
    const { apiKey } = await newParties(t);
    const sent = await sendTransfer(t, apiKey, [file()]);
    const received = await listTransfers(t, apiKey, "direction=received");
    expect(received.transfers.map((one) => one.id)).toEqual([sent.id]);
    const bobs = await inboxOk(apiKey, "", "bob");
    expect(bobs.transfers).toEqual([sent]);
    expect((await inboxOk(apiKey, "", "alice")).transfers).toEqual([]);
  });
});

describe("across connected accounts (decisions 3.12, 3.18, 3.19)", () => {
  /**
   * Account A (alice, bob) and account B (carol), connected through the API. Returns null when this
   * build has no account connections yet (the route answers 404), and the test is skipped.
   */
  async function connectedAccounts() {
    const a = await newParties(t);
    const b = await t.newAccount();
    const carol = await registerAgent(t, b.apiKey, { agent_id: "carol" });
    const invited = await t.call("POST", "/v1/connections", { key: a.apiKey, body: { account: b.email } });
    if (invited.statusCode === 404 && /no route/.test(invited.body)) return null;
    expect(invited.statusCode, invited.body).toBe(201);
    const connectionId = invited.json().id as string;
    const accepted = await t.call("POST", `/v1/connections/${connectionId}/accept`, { key: b.apiKey });
    expect(accepted.statusCode, accepted.body).toBe(200);
    return { a, b, carol, connectionId };
  }

  it("only the recipient side downloads; both sides see the transfer; a third account sees nothing", async (ctx) => {
    const setup = await connectedAccounts();
    if (!setup) return ctx.skip();
    const { a, b } = setup;
    const data = bytes(3000);
    const sent = await sendTransfer(t, a.apiKey, [{ name: "x.bin", data }], { recipient: "carol" });
    expect(sent).toMatchObject({ sender: "alice", recipient: "carol", status: "active" });

    expect((await getTransfer(t, b.apiKey, sent.id)).json()).toEqual(sent);
    expectError(await download(t, a.apiKey, sent.id), 403, "FORBIDDEN");
    expect((await getTransfer(t, a.apiKey, sent.id)).json().downloads).toBe(0);
    const dl = await downloadOk(t, b.apiKey, sent.id, "carol");
    expect(dl.downloads).toBe(1);
    expect((await fetchLink(t, dl.files[0]?.download_url as string)).rawPayload.equals(data)).toBe(true);

    const ids = async (key: string, query: string) =>
      (await listTransfers(t, key, query)).transfers.map((one) => one.id);
    expect(await ids(a.apiKey, "direction=sent")).toEqual([sent.id]);
    expect(await ids(a.apiKey, "direction=received")).toEqual([]);
    expect(await ids(b.apiKey, "direction=received")).toEqual([sent.id]);
    expect(await ids(b.apiKey, "direction=sent")).toEqual([]);
    expect((await inboxOk(b.apiKey, "", "carol")).transfers.map((one) => one.id)).toEqual([sent.id]);
    expect((await inboxOk(a.apiKey)).transfers).toEqual([]);

    const stranger = await t.newAccount();
    expectError(await getTransfer(t, stranger.apiKey, sent.id), 404, "NOT_FOUND");
    expectError(await download(t, stranger.apiKey, sent.id), 404, "NOT_FOUND");
    expectError(await deleteTransfer(stranger.apiKey, sent.id), 404, "NOT_FOUND");
  });

  it("without an active connection another account's agent is no recipient", async (ctx) => {
    const setup = await connectedAccounts();
    if (!setup) return ctx.skip();
    const { a, connectionId } = setup;
    const stranger = await t.newAccount();
    await registerAgent(t, stranger.apiKey, { agent_id: "dave" });
    const toDave = await postTransfer(t, a.apiKey, [file()], { ...A2A, recipient: "dave" });
    expect(detailPaths(expectError(toDave, 400, "VALIDATION_ERROR"))).toContain("recipient");
    // Before the connection ends carol is a recipient; after, she is not.
    const ended = await t.call("DELETE", `/v1/connections/${connectionId}`, { key: a.apiKey });
    expect(ended.statusCode, ended.body).toBe(200);
    const toCarol = await postTransfer(t, a.apiKey, [file()], { ...A2A, recipient: "carol" });
    expect(detailPaths(expectError(toCarol, 400, "VALIDATION_ERROR"))).toContain("recipient");
    expect((await listTransfers(t, a.apiKey)).total).toBe(0);
  });
});

describe("GET /v1/transfers/{id}/download: the counter", () => {
  it("max_downloads 2: downloads 1 then 2 (remaining 1 then 0), the third → 410 GONE, status downloaded", async () => {
    const { apiKey } = await newParties(t);
    const sent = await sendTransfer(t, apiKey, [file()], { max_downloads: "2" });
    const first = await downloadOk(t, apiKey, sent.id);
    expect(first).toMatchObject({ id: sent.id, downloads: 1, downloads_remaining: 1, auto_delete: true });
    expect(first.expires_at).toBe(sent.expires_at);
    const second = await downloadOk(t, apiKey, sent.id);
    expect(second).toMatchObject({ downloads: 2, downloads_remaining: 0 });
    expectError(await download(t, apiKey, sent.id), 410, "GONE");
    expectError(await download(t, apiKey, sent.id), 410, "GONE");
    const got = (await getTransfer(t, apiKey, sent.id)).json() as TransferBody;
    expect(got).toMatchObject({ status: "downloaded", downloads: 2, max_downloads: 2 });
  });

  it("parallel downloads are counted exactly: max_downloads 3 of 6 at once → three 200, three 410", async () => {
    const { apiKey } = await newParties(t);
    const sent = await sendTransfer(t, apiKey, [file()], { max_downloads: "3", auto_delete: "false" });
    const answers = await Promise.all(Array.from({ length: 6 }, () => download(t, apiKey, sent.id)));
    const codes = answers.map((res) => res.statusCode).sort();
    expect(codes).toEqual([200, 200, 200, 410, 410, 410]);
    const counts = answers.filter((res) => res.statusCode === 200).map((res) => res.json().downloads);
    expect(counts.sort()).toEqual([1, 2, 3]);
    expect((await getTransfer(t, apiKey, sent.id)).json()).toMatchObject({
      downloads: 3,
      status: "downloaded",
    });
  });

  it("X-Service-Agent: the recipient agent may download; the sender agent or a third agent → 403", async () => {
    const { apiKey } = await newParties(t, "builder");
    await registerAgent(t, apiKey, { agent_id: "carol" });
    const sent = await sendTransfer(t, apiKey, [file()], { max_downloads: "5" });
    expectError(await download(t, apiKey, sent.id, "alice"), 403, "FORBIDDEN");
    expectError(await download(t, apiKey, sent.id, "carol"), 403, "FORBIDDEN");
    expect((await getTransfer(t, apiKey, sent.id)).json().downloads).toBe(0);
    expect((await downloadOk(t, apiKey, sent.id, "bob")).downloads).toBe(1);
    // An agent the account does not have is refused, and counts nothing either.
    const unknown = await download(t, apiKey, sent.id, "nobody");
    expectError(unknown, 404, "NOT_FOUND");
    expect((await getTransfer(t, apiKey, sent.id)).json().downloads).toBe(1);
  });

  it("a pending presigned transfer → 409 and no download counted", async () => {
    const { apiKey } = await newParties(t);
    const presigned = await presignedOk(t, apiKey, [{ name: "later.bin", size: 4 }]);
    const res = await download(t, apiKey, presigned.id);
    expect(res.statusCode, res.body).toBe(409);
    expect(res.json().error.status).toBe(409);
    expect((await getTransfer(t, apiKey, presigned.id)).json()).toMatchObject({
      status: "pending",
      downloads: 0,
    });
  });
});

describe("expiry (test clock)", () => {
  it("past expires_at: GET reads expired, download → 410 at once; the housekeeper then deletes the data", async () => {
    const { apiKey } = await newParties(t);
    const data = bytes(2048);
    const sent = await sendTransfer(t, apiKey, [{ name: "e.bin", data }], { expires_in: "1h" });
    expect(blobFiles(t, sent.id)).toHaveLength(1);
    // Links handed out 50 minutes in live 15 minutes: past the transfer's expiry.
    await advanceClock(t, 50 * MINUTE);
    const dl = await downloadOk(t, apiKey, sent.id);
    const link = dl.files[0]?.download_url as string;
    await advanceClock(t, 11 * MINUTE);

    const got = (await getTransfer(t, apiKey, sent.id)).json() as TransferBody;
    expect(got.status).toBe("expired");
    expectError(await download(t, apiKey, sent.id), 410, "GONE");
    expect((await listTransfers(t, apiKey, "status=expired")).transfers.map((one) => one.id)).toEqual([
      sent.id,
    ]);
    expect((await listTransfers(t, apiKey, "status=active")).total).toBe(0);
    expect((await inboxOk(apiKey, "", "bob")).transfers).toEqual([]);

    await waitUntil(() => blobFiles(t, sent.id).length === 0, "the expired transfer's data is deleted");
    const gone = await fetchLink(t, link);
    expectError(gone, 410, "GONE");
    expect(gone.rawPayload.includes(data.subarray(0, 64))).toBe(false);
    // The history stays: the transfer still reads as expired.
    expect((await getTransfer(t, apiKey, sent.id)).json()).toMatchObject({ status: "expired", downloads: 1 });
  });

  it("a transfer is live until the second before expires_at", async () => {
    const { apiKey } = await newParties(t);
    const sent = await sendTransfer(t, apiKey, [file()], { expires_in: "1h" });
    await advanceClock(t, 59 * MINUTE);
    expect((await getTransfer(t, apiKey, sent.id)).json().status).toBe("active");
    expect((await downloadOk(t, apiKey, sent.id)).downloads).toBe(1);
  });

  it("auto_delete true: the data goes once the last download's links have expired (15 minutes)", async () => {
    const { apiKey } = await newParties(t);
    const data = bytes(5000);
    const sent = await sendTransfer(t, apiKey, [{ name: "once.bin", data }], { max_downloads: "1" });
    expect(sent.auto_delete).toBe(true);
    const dl = await downloadOk(t, apiKey, sent.id);
    expect(dl).toMatchObject({ downloads: 1, downloads_remaining: 0, auto_delete: true });
    expect((await getTransfer(t, apiKey, sent.id)).json().status).toBe("downloaded");
    const link = dl.files[0]?.download_url as string;

    await advanceClock(t, 14 * MINUTE);
    await sweep();
    expect(blobFiles(t, sent.id), "kept while the links live").toHaveLength(1);
    const res = await fetchLink(t, link);
    expect(res.statusCode).toBe(200);
    expect(res.rawPayload.equals(data)).toBe(true);

    await advanceClock(t, 2 * MINUTE);
    await waitUntil(() => blobFiles(t, sent.id).length === 0, "the downloaded-out data is deleted");
    expect((await getTransfer(t, apiKey, sent.id)).json().status).toBe("downloaded");
  });

  it("auto_delete true but downloads left: the data stays", async () => {
    const { apiKey } = await newParties(t);
    const sent = await sendTransfer(t, apiKey, [file()], { max_downloads: "2" });
    await downloadOk(t, apiKey, sent.id);
    await advanceClock(t, 16 * MINUTE);
    await sweep();
    expect(blobFiles(t, sent.id)).toHaveLength(1);
    const dl = await downloadOk(t, apiKey, sent.id);
    expect((await fetchLink(t, dl.files[0]?.download_url as string)).body).toBe("payload");
  });

  it("auto_delete false (presigned default): downloaded out, the data stays until expiry", async () => {
    const { apiKey } = await newParties(t);
    const { transfer } = await presignedActive(t, apiKey, [{ name: "keep.bin", data: bytes(300) }], {
      max_downloads: 1,
      expires_in: "12h",
    });
    expect(transfer.auto_delete).toBe(false);
    await downloadOk(t, apiKey, transfer.id);
    expect((await getTransfer(t, apiKey, transfer.id)).json().status).toBe("downloaded");
    await advanceClock(t, 16 * MINUTE);
    await sweep();
    expect(blobFiles(t, transfer.id), "kept after the links expired").toHaveLength(1);
    await advanceClock(t, 6 * 3600);
    await sweep();
    expect(blobFiles(t, transfer.id), "kept before expiry").toHaveLength(1);

    await advanceClock(t, 6 * 3600);
    await waitUntil(() => blobFiles(t, transfer.id).length === 0, "the data is deleted at expiry");
    expect((await getTransfer(t, apiKey, transfer.id)).json().status).toBe("expired");
  });

  it("auto_delete false on a multipart transfer keeps downloaded-out data too", async () => {
    const { apiKey } = await newParties(t);
    const sent = await sendTransfer(t, apiKey, [file()], { max_downloads: "1", auto_delete: "false" });
    expect(sent.auto_delete).toBe(false);
    await downloadOk(t, apiKey, sent.id);
    await advanceClock(t, 16 * MINUTE);
    await sweep();
    expect(blobFiles(t, sent.id)).toHaveLength(1);
  });
});

describe("before the clean-up job has run (housekeeper paused)", () => {
  it("a transfer past expires_at reads, lists and downloads as expired at once (decisions 3.13)", async () => {
    const { apiKey } = await newParties(t);
    const active = await sendTransfer(t, apiKey, [file()], { expires_in: "1h" });
    const downloaded = await sendTransfer(t, apiKey, [file()], { expires_in: "1h", max_downloads: "1" });
    await downloadOk(t, apiKey, downloaded.id);
    const pending = await presignedOk(t, apiKey, [{ name: "p", size: 1 }], { expires_in: "1h" });
    await withoutHousekeeper(t, async () => {
      await advanceClock(t, 3601);
      for (const id of [active.id, downloaded.id, pending.id]) {
        expect((await getTransfer(t, apiKey, id)).json().status).toBe("expired");
      }
      expectError(await download(t, apiKey, active.id), 410, "GONE");
      expectError(await download(t, apiKey, downloaded.id), 410, "GONE");
      const expired = await listTransfers(t, apiKey, "status=expired");
      expect(expired.transfers.map((one) => one.id).sort()).toEqual(
        [active.id, downloaded.id, pending.id].sort(),
      );
      for (const status of ["active", "downloaded", "pending"]) {
        expect((await listTransfers(t, apiKey, `status=${status}`)).total, status).toBe(0);
      }
      expect((await inboxOk(apiKey, "", "bob")).transfers).toEqual([]);
    });
  });

  it("storage held by a transfer past expires_at is free at once (decisions 3.14, spec section 8)", async () => {
    const { apiKey } = await newParties(t);
    const files = Array.from({ length: FREE.storageBytes / FREE.maxFileSize }, (_, index) => ({
      name: `fill-${index}.bin`,
      size: FREE.maxFileSize,
    }));
    await presignedOk(t, apiKey, files, { expires_in: "1h" });
    expectError(await postTransfer(t, apiKey, [file()]), 413, "FILE_TOO_LARGE");
    await withoutHousekeeper(t, async () => {
      await advanceClock(t, 3601);
      // Total storage is the sum over non-expired transfers: the expired one holds nothing.
      const res = await postTransfer(t, apiKey, [file()]);
      expect(res.statusCode, res.body).toBe(201);
    });
  });
});

describe("DELETE /v1/transfers/{id}", () => {
  it("200 {id, status: deleted}; then GET 404, download 404, gone from lists, data deleted; again → 404", async () => {
    const { apiKey } = await newParties(t);
    const data = bytes(777);
    const sent = await sendTransfer(t, apiKey, [{ name: "d.bin", data }]);
    const link = (await downloadOk(t, apiKey, sent.id)).files[0]?.download_url as string;
    const res = await deleteTransfer(apiKey, sent.id);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({ id: sent.id, status: "deleted" });

    expectError(await getTransfer(t, apiKey, sent.id), 404, "NOT_FOUND");
    expectError(await download(t, apiKey, sent.id), 404, "NOT_FOUND");
    expect((await listTransfers(t, apiKey)).total).toBe(0);
    expect((await inboxOk(apiKey)).transfers).toEqual([]);
    await waitUntil(() => blobFiles(t, sent.id).length === 0, "the deleted transfer's data is gone");
    expectError(await fetchLink(t, link), 410, "GONE");
    expectError(await deleteTransfer(apiKey, sent.id), 404, "NOT_FOUND");
    expectError(await deleteTransfer(apiKey, UNKNOWN_ID), 404, "NOT_FOUND");
  });

  it("a pending presigned transfer can be deleted; its upload link then takes nothing", async () => {
    const { apiKey } = await newParties(t);
    const presigned = await presignedOk(t, apiKey, [{ name: "p.bin", size: 3 }]);
    expect((await deleteTransfer(apiKey, presigned.id)).json()).toEqual({
      id: presigned.id,
      status: "deleted",
    });
    const upload = presigned.upload_urls[0];
    const put = await t.app.inject({
      method: "PUT",
      url: new URL(upload?.upload_url as string).pathname,
      headers: upload?.headers ?? {},
      payload: Buffer.from("abc"),
    });
    expect(put.statusCode).toBe(410);
    expect(blobFiles(t, presigned.id)).toEqual([]);
    expectError(
      await t.call("POST", `/v1/transfers/${presigned.id}/confirm`, { key: apiKey }),
      404,
      "NOT_FOUND",
    );
  });

  it("an upload still streaming when the transfer is deleted leaves no data behind (decisions 3.3)", async () => {
    const { apiKey } = await newParties(t);
    const presigned = await presignedOk(t, apiKey, [{ name: "slow.bin", size: 20 }]);
    const upload = presigned.upload_urls[0] as PresignedBody["upload_urls"][0];
    const body = new PassThrough();
    const put = t.app.inject({
      method: "PUT",
      url: pathOf(upload.upload_url),
      headers: { ...upload.headers, "content-length": "20" },
      payload: body,
    });
    body.write(Buffer.alloc(10, 1));
    await sleep(200);
    expect((await deleteTransfer(apiKey, presigned.id)).statusCode).toBe(200);
    await waitUntil(
      async () =>
        (await t.service.db("transfers").where({ id: presigned.id }).first())?.files_deleted === true,
      "the housekeeper has purged the deleted transfer",
    );
    body.end(Buffer.alloc(10, 2));
    await put;
    await sleep(1500);
    await sweep();
    expect(blobFiles(t, presigned.id), "no file of a deleted transfer stays on disk").toEqual([]);
  });

  it("an expired transfer can be deleted", async () => {
    const { apiKey } = await newParties(t);
    const sent = await sendTransfer(t, apiKey, [file()], { expires_in: "1h" });
    await advanceClock(t, 3601);
    expect((await getTransfer(t, apiKey, sent.id)).json().status).toBe("expired");
    expect((await deleteTransfer(apiKey, sent.id)).json()).toEqual({ id: sent.id, status: "deleted" });
    expectError(await getTransfer(t, apiKey, sent.id), 404, "NOT_FOUND");
  });
});

describe("storage is released", () => {
  /** A free account whose storage is full, held by one pending presigned transfer. */
  async function fullAccount(extra: Record<string, unknown> = {}) {
    const parties = await newParties(t);
    const files = Array.from({ length: FREE.storageBytes / FREE.maxFileSize }, (_, index) => ({
      name: `fill-${index}.bin`,
      size: FREE.maxFileSize,
    }));
    const filler = await presignedOk(t, parties.apiKey, files, extra);
    expectError(await postTransfer(t, parties.apiKey, [file()]), 413, "FILE_TOO_LARGE");
    return { ...parties, filler };
  }

  it("on delete: a full free account can upload again", async () => {
    const { apiKey, filler } = await fullAccount();
    expect((await deleteTransfer(apiKey, filler.id)).statusCode).toBe(200);
    expect((await sendTransfer(t, apiKey, [file()])).status).toBe("active");
  });

  it("on expiry: a full free account can upload again", async () => {
    const { apiKey } = await fullAccount({ expires_in: "1h" });
    await advanceClock(t, 3601);
    // The housekeeper records the expiry (and the release) in the background: give it a moment.
    let res = await postTransfer(t, apiKey, [file()]);
    for (let attempt = 0; res.statusCode === 413 && attempt < 20; attempt++) {
      await sleep(250);
      res = await postTransfer(t, apiKey, [file()]);
    }
    expect(res.statusCode, res.body).toBe(201);
  });

  it("when downloaded out with auto_delete: the account can upload again at once", async () => {
    const { apiKey } = await newParties(t);
    await presignedOk(t, apiKey, [
      ...Array.from({ length: 4 }, (_, index) => ({ name: `fill-${index}`, size: FREE.maxFileSize })),
      { name: "fill-4", size: FREE.maxFileSize - 10 },
    ]);
    const last = await sendTransfer(t, apiKey, [{ name: "ten.bin", data: bytes(10) }], {
      max_downloads: "1",
    });
    expectError(await postTransfer(t, apiKey, [file("one.txt", "1")]), 413, "FILE_TOO_LARGE");
    await downloadOk(t, apiKey, last.id);
    expect((await sendTransfer(t, apiKey, [file("one.txt", "1")])).status).toBe("active");
  });
});

describe("GET /v1/transfers", () => {
  it("newest first; limit default 20, max 100; offset, total and has_more", async () => {
    const { apiKey } = await newParties(t);
    const ids: string[] = [];
    for (let index = 0; index < 22; index++)
      ids.push((await sendTransfer(t, apiKey, [file(`n${index}`)])).id);
    const newestFirst = [...ids].reverse();

    const first = await listTransfers(t, apiKey);
    expect(Object.keys(first).sort()).toEqual(["has_more", "limit", "offset", "total", "transfers"]);
    expect(first).toMatchObject({ total: 22, limit: 20, offset: 0, has_more: true });
    expect(first.transfers.map((one) => one.id)).toEqual(newestFirst.slice(0, 20));
    for (const one of first.transfers) expectTransferShape(one);

    const rest = await listTransfers(t, apiKey, "offset=20");
    expect(rest).toMatchObject({ total: 22, limit: 20, offset: 20, has_more: false });
    expect(rest.transfers.map((one) => one.id)).toEqual(newestFirst.slice(20));

    const page = await listTransfers(t, apiKey, "limit=5&offset=5");
    expect(page).toMatchObject({ total: 22, limit: 5, offset: 5, has_more: true });
    expect(page.transfers.map((one) => one.id)).toEqual(newestFirst.slice(5, 10));

    const all = await listTransfers(t, apiKey, "limit=100");
    expect(all).toMatchObject({ total: 22, limit: 100, has_more: false });
    expect(all.transfers).toHaveLength(22);

    const past = await listTransfers(t, apiKey, "offset=50");
    expect(past).toMatchObject({ total: 22, transfers: [], has_more: false });
  });

  it.each([
    "limit=101",
    "limit=0",
    "limit=-1",
    "limit=abc",
    "offset=-1",
    "direction=sideways",
    "status=bogus",
  ])("%s → 400 VALIDATION_ERROR", async (query) => {
    const { apiKey } = await newParties(t);
    expectError(await t.call("GET", `/v1/transfers?${query}`, { key: apiKey }), 400, "VALIDATION_ERROR");
  });

  it("direction: an account's own agent-to-agent transfer is both sent and received; others see nothing", async () => {
    const { apiKey } = await newParties(t);
    const stranger = await newParties(t);
    const a = await sendTransfer(t, apiKey, [file()]);
    const b = await sendTransfer(t, apiKey, [file()], toAlice);
    for (const direction of ["sent", "received"]) {
      const list = await listTransfers(t, apiKey, `direction=${direction}`);
      expect(list.transfers.map((one) => one.id)).toEqual([b.id, a.id]);
      expect(list.total).toBe(2);
      expect((await listTransfers(t, stranger.apiKey, `direction=${direction}`)).total).toBe(0);
    }
    expect((await listTransfers(t, stranger.apiKey)).total).toBe(0);
  });

  it("status filter: pending, active, downloaded, expired; deleted never listed", async () => {
    const { apiKey } = await newParties(t);
    const expiring = await sendTransfer(t, apiKey, [file()], { expires_in: "1h" });
    const active = await sendTransfer(t, apiKey, [file()]);
    const pending = await presignedOk(t, apiKey, [{ name: "p", size: 1 }]);
    const downloaded = await sendTransfer(t, apiKey, [file()], { max_downloads: "1" });
    await downloadOk(t, apiKey, downloaded.id);
    const deleted = await sendTransfer(t, apiKey, [file()]);
    await deleteTransfer(apiKey, deleted.id);
    await advanceClock(t, 3601);

    const ids = async (status: string) =>
      (await listTransfers(t, apiKey, `status=${status}`)).transfers.map((one) => [one.id, one.status]);
    expect(await ids("active")).toEqual([[active.id, "active"]]);
    expect(await ids("pending")).toEqual([[pending.id, "pending"]]);
    expect(await ids("downloaded")).toEqual([[downloaded.id, "downloaded"]]);
    expect(await ids("expired")).toEqual([[expiring.id, "expired"]]);
    const all = await listTransfers(t, apiKey);
    expect(all.total).toBe(4);
    expect(all.transfers.map((one) => one.id)).not.toContain(deleted.id);
  });
});

describe("GET /v1/transfers/inbox", () => {
  it("per agent, by X-Service-Agent or agent_id; all the account's agents without either; oldest first", async () => {
    const { apiKey } = await newParties(t);
    const toBob1 = await sendTransfer(t, apiKey, [file()]);
    const toAlice1 = await sendTransfer(t, apiKey, [file()], toAlice);
    const toBob2 = await sendTransfer(t, apiKey, [file()]);

    const bob = await inboxOk(apiKey, "", "bob");
    expect(bob.transfers.map((one) => one.id)).toEqual([toBob1.id, toBob2.id]);
    expect(bob.has_more).toBe(false);
    expect(typeof bob.next_cursor).toBe("string");
    for (const one of bob.transfers) expectTransferShape(one);
    expect((await inboxOk(apiKey, "agent_id=bob")).transfers.map((one) => one.id)).toEqual([
      toBob1.id,
      toBob2.id,
    ]);
    expect((await inboxOk(apiKey, "", "alice")).transfers.map((one) => one.id)).toEqual([toAlice1.id]);
    expect((await inboxOk(apiKey, "agent_id=alice")).transfers.map((one) => one.id)).toEqual([toAlice1.id]);
    expect((await inboxOk(apiKey)).transfers.map((one) => one.id)).toEqual([
      toBob1.id,
      toAlice1.id,
      toBob2.id,
    ]);

    // Another account sees nothing, and cannot name these agents.
    const stranger = await t.newAccount();
    expect((await inboxOk(stranger.apiKey)).transfers).toEqual([]);
    expectError(await inbox(stranger.apiKey, "agent_id=bob"), 400, "VALIDATION_ERROR");
  });

  it("shows pending and active transfers only", async () => {
    const { apiKey } = await newParties(t);
    const pending = await presignedOk(t, apiKey, [{ name: "p", size: 1 }]);
    const active = await sendTransfer(t, apiKey, [file()]);
    const downloaded = await sendTransfer(t, apiKey, [file()], { max_downloads: "1" });
    await downloadOk(t, apiKey, downloaded.id);
    const deleted = await sendTransfer(t, apiKey, [file()]);
    await deleteTransfer(apiKey, deleted.id);
    const body = await inboxOk(apiKey, "", "bob");
    expect(body.transfers.map((one) => [one.id, one.status])).toEqual([
      [pending.id, "pending"],
      [active.id, "active"],
    ]);
  });

  it("cursor paging returns only newer transfers; limit and has_more", async () => {
    const { apiKey } = await newParties(t);
    const first = await sendTransfer(t, apiKey, [file()]);
    const second = await sendTransfer(t, apiKey, [file()]);
    const page1 = await inboxOk(apiKey, "limit=1", "bob");
    expect(page1.transfers.map((one) => one.id)).toEqual([first.id]);
    expect(page1.has_more).toBe(true);
    const page2 = await inboxOk(apiKey, `limit=1&cursor=${page1.next_cursor}`, "bob");
    expect(page2.transfers.map((one) => one.id)).toEqual([second.id]);
    expect(page2.has_more).toBe(false);
    const empty = await inboxOk(apiKey, `cursor=${page2.next_cursor}`, "bob");
    expect(empty.transfers).toEqual([]);
    expect(empty.next_cursor).toBe(page2.next_cursor);

    const third = await sendTransfer(t, apiKey, [file()]);
    const page3 = await inboxOk(apiKey, `cursor=${page2.next_cursor}`, "bob");
    expect(page3.transfers.map((one) => one.id)).toEqual([third.id]);
  });

  it.each(["wait=31", "wait=-1", "wait=abc", "limit=0", "limit=101", "cursor=not-a-cursor!"])(
    "%s → 400 VALIDATION_ERROR",
    async (query) => {
      const { apiKey } = await newParties(t);
      expectError(await inbox(apiKey, query, "bob"), 400, "VALIDATION_ERROR");
    },
  );

  it("an unknown X-Service-Agent → 404, as on every route that takes the header", async () => {
    const { apiKey } = await newParties(t);
    expectError(await inbox(apiKey, "", "nobody"), 404, "NOT_FOUND");
  });

  // Woken by the append, not found by the next idle poll (5 s on the embedded database, as long as
  // the wait): an answer within a second can only come from the wake-up. How soon it comes (the
  // 100 ms of decisions 8.4) is bench/event-stream.ts's figure; timed here against 100 ms, the test
  // failed on a loaded 2-core machine (122-196 ms) whichever tree ran it.
  it("long-poll: a waiting request answers with a new transfer as soon as it is sent, not at the next poll", async () => {
    const { apiKey } = await newParties(t);
    let answeredAt = 0;
    const waiting = inbox(apiKey, "wait=5", "bob").then((res) => {
      answeredAt = performance.now();
      return res;
    });
    await sleep(300);
    expect(answeredAt, "the inbox waits while there is nothing").toBe(0);
    const sent = await sendTransfer(t, apiKey, [file()]);
    const postedAt = performance.now();
    const res = await waiting;
    expect(res.statusCode, res.body).toBe(200);
    expect((res.json() as InboxBody).transfers.map((one) => one.id)).toEqual([sent.id]);
    expect(answeredAt - postedAt, "ms from the POST's answer to the inbox's").toBeLessThan(1000);
  });

  it("long-poll with nothing new returns empty after about the wait time; other agents' transfers do not end it", async () => {
    const { apiKey } = await newParties(t);
    const old = await sendTransfer(t, apiKey, [file()]);
    const { next_cursor: cursor } = await inboxOk(apiKey, "", "bob");
    const started = performance.now();
    const waiting = inbox(apiKey, `wait=2&cursor=${cursor}`, "bob");
    await sleep(300);
    await sendTransfer(t, apiKey, [file()], toAlice); // to alice: not bob's news
    const res = await waiting;
    const elapsed = performance.now() - started;
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ transfers: [], next_cursor: cursor, has_more: false });
    expect(elapsed).toBeGreaterThanOrEqual(1900);
    expect(elapsed).toBeLessThan(4000);
    expect(old.id).toBeTruthy();
  });

  it("wait with something already there answers at once", async () => {
    const { apiKey } = await newParties(t);
    const sent = await sendTransfer(t, apiKey, [file()]);
    const started = performance.now();
    const body = await inboxOk(apiKey, "wait=10", "bob");
    expect(body.transfers.map((one) => one.id)).toEqual([sent.id]);
    expect(performance.now() - started).toBeLessThan(1000);
  });
});
