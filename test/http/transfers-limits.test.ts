import type { LightMyRequestResponse } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestApp, type TestApp } from "../support/app.js";
import { advanceClock, expectError, startOfWindow } from "./helpers.js";
import {
  A2A,
  bytes,
  confirm,
  download,
  downloadOk,
  getTransfer,
  listTransfers,
  multipart,
  newParties,
  type PresignedBody,
  postPresigned,
  postTransfer,
  presignedOk,
  sendTransfer,
} from "./transfer-helpers.js";

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => t.close());

const MINUTE_MS = 60_000;
const UNKNOWN_ID = "tr_AAAAAAAAAAAAAAAAAAAAAAAA";
const file = () => [{ name: "f.txt", data: Buffer.from("payload"), type: "text/plain" }];

function expectRateHeaders(res: LightMyRequestResponse, limit: number, remaining?: number): void {
  expect(res.headers["x-ratelimit-limit"], `${res.statusCode} ${res.body}`).toBe(String(limit));
  const left = Number(res.headers["x-ratelimit-remaining"]);
  expect(Number.isInteger(left)).toBe(true);
  if (remaining !== undefined) expect(left).toBe(remaining);
  expect(left).toBeGreaterThanOrEqual(0);
  expect(left).toBeLessThanOrEqual(limit);
  const reset = Number(res.headers["x-ratelimit-reset"]);
  expect(Number.isInteger(reset), "X-RateLimit-Reset is a Unix timestamp in seconds").toBe(true);
  const now = t.service.clock.now().getTime();
  expect(reset * 1000).toBeGreaterThan(now - 1000);
  expect(reset * 1000).toBeLessThanOrEqual(now + MINUTE_MS + 1000);
  expect(res.headers["retry-after"]).toBeUndefined();
}

describe("rate-limit headers on the transfer endpoints (spec section 8)", () => {
  it("each endpoint reports its own limit and counts in its own bucket", async () => {
    const { apiKey } = await newParties(t);
    await startOfWindow(t, MINUTE_MS);

    const created = await postTransfer(t, apiKey, file());
    expect(created.statusCode, created.body).toBe(201);
    expectRateHeaders(created, 60, 59);
    const id = created.json().id as string;

    const list = await t.call("GET", "/v1/transfers", { key: apiKey });
    expectRateHeaders(list, 120, 119);
    expectRateHeaders(await t.call("GET", "/v1/transfers?limit=5", { key: apiKey }), 120, 118);
    expectRateHeaders(await getTransfer(t, apiKey, id), 120, 119);
    expectRateHeaders(await getTransfer(t, apiKey, id), 120, 118);
    const dl = await download(t, apiKey, id);
    expect(dl.statusCode).toBe(200);
    expectRateHeaders(dl, 30, 29);

    // Endpoints outside the table share the default bucket of 600.
    const inbox = await t.call("GET", "/v1/transfers/inbox", { key: apiKey });
    expect(inbox.statusCode).toBe(200);
    expectRateHeaders(inbox, 600);
    const presigned = await postPresigned(t, apiKey, { ...A2A, files: [{ name: "p", size: 1 }] });
    expect(presigned.statusCode).toBe(201);
    expectRateHeaders(presigned, 600);
    const pendingId = (presigned.json() as PresignedBody).id;
    expectRateHeaders(await confirm(t, apiKey, pendingId), 600);

    const deleted = await t.call("DELETE", `/v1/transfers/${id}`, { key: apiKey });
    expect(deleted.statusCode).toBe(200);
    expectRateHeaders(deleted, 30, 29);
    // The inbox is not a transfer id: GET /v1/transfers/{id} still counts separately from it.
    expectRateHeaders(await getTransfer(t, apiKey, pendingId), 120, 117);
  });

  it("error answers carry the headers too (400, 404, 409, 410, 413, 415)", async () => {
    const { apiKey } = await newParties(t);
    const sent = await sendTransfer(t, apiKey, file(), { max_downloads: "1" });
    await downloadOk(t, apiKey, sent.id);
    const pending = await presignedOk(t, apiKey, [{ name: "p", size: 1 }]);

    const notFound = await getTransfer(t, apiKey, UNKNOWN_ID);
    expectError(notFound, 404, "NOT_FOUND");
    expectRateHeaders(notFound, 120);
    const bad = await t.call("GET", "/v1/transfers?limit=101", { key: apiKey });
    expectError(bad, 400, "VALIDATION_ERROR");
    expectRateHeaders(bad, 120);
    const gone = await download(t, apiKey, sent.id);
    expectError(gone, 410, "GONE");
    expectRateHeaders(gone, 30);
    const early = await download(t, apiKey, pending.id);
    expect(early.statusCode).toBe(409);
    expectRateHeaders(early, 30);
    const json = await t.call("POST", "/v1/transfers", { key: apiKey, body: { sender: "alice" } });
    expectError(json, 415, "UNSUPPORTED_MEDIA_TYPE");
    expectRateHeaders(json, 60);
    const tooBig = await postPresigned(t, apiKey, {
      ...A2A,
      files: [{ name: "big", size: 51 * 1024 * 1024 }],
    });
    expectError(tooBig, 413, "FILE_TOO_LARGE");
    expectRateHeaders(tooBig, 600);
    const missing = await t.call("DELETE", `/v1/transfers/${UNKNOWN_ID}`, { key: apiKey });
    expectError(missing, 404, "NOT_FOUND");
    expectRateHeaders(missing, 30);
  });
});

describe("429 RATE_LIMITED", () => {
  it("the 31st download in a minute → 429 with Retry-After, counts nothing; 60 s later it works again", async () => {
    const { apiKey } = await newParties(t);
    const sent = await sendTransfer(t, apiKey, file(), { max_downloads: "100" });
    await startOfWindow(t, MINUTE_MS);
    for (let index = 1; index <= 30; index++) {
      const res = await download(t, apiKey, sent.id);
      expect(res.statusCode, res.body).toBe(200);
      expectRateHeaders(res, 30, 30 - index);
      expect(res.json().downloads).toBe(index);
    }
    const limited = await download(t, apiKey, sent.id);
    expectError(limited, 429, "RATE_LIMITED");
    expect(limited.headers["x-ratelimit-limit"]).toBe("30");
    expect(limited.headers["x-ratelimit-remaining"]).toBe("0");
    const retryAfter = Number(limited.headers["retry-after"]);
    expect(Number.isInteger(retryAfter)).toBe(true);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    const reset = Number(limited.headers["x-ratelimit-reset"]) * 1000;
    expect(t.service.clock.now().getTime() + retryAfter * 1000).toBeGreaterThanOrEqual(reset - 1000);

    // The refused call counted no download; other buckets are untouched.
    const got = await getTransfer(t, apiKey, sent.id);
    expect(got.statusCode).toBe(200);
    expect(got.json().downloads).toBe(30);

    await advanceClock(t, 60);
    const again = await download(t, apiKey, sent.id);
    expect(again.statusCode, again.body).toBe(200);
    expect(again.json()).toMatchObject({ downloads: 31, downloads_remaining: 69 });
    expectRateHeaders(again, 30, 29);
  });

  it("limits are per API key: another key of the same account is not limited", async () => {
    const { apiKey } = await newParties(t);
    const sent = await sendTransfer(t, apiKey, file(), { max_downloads: "100" });
    const second = await t.call("POST", "/v1/api-keys", { key: apiKey, body: { name: "second" } });
    expect(second.statusCode, second.body).toBe(201);
    const otherKey = second.json().api_key as string;
    await startOfWindow(t, MINUTE_MS);
    for (let index = 0; index < 30; index++)
      expect((await download(t, apiKey, sent.id)).statusCode).toBe(200);
    expectError(await download(t, apiKey, sent.id), 429, "RATE_LIMITED");
    const other = await download(t, otherKey, sent.id);
    expect(other.statusCode, other.body).toBe(200);
    expectRateHeaders(other, 30, 29);
  });

  it.each([
    ["DELETE /v1/transfers/{id} (30 a minute)", "DELETE", `/v1/transfers/${UNKNOWN_ID}`, 30, 404],
    ["GET /v1/transfers/{id} (120 a minute)", "GET", `/v1/transfers/${UNKNOWN_ID}`, 120, 404],
    ["GET /v1/transfers (120 a minute)", "GET", "/v1/transfers?limit=1", 120, 200],
  ])("%s: the call after the limit → 429", async (_name, method, url, limit, status) => {
    const { apiKey } = await newParties(t);
    await startOfWindow(t, MINUTE_MS);
    for (let index = 1; index <= limit; index++) {
      const res = await t.call(method, url, { key: apiKey });
      expect(res.statusCode).toBe(status);
      expect(res.headers["x-ratelimit-remaining"]).toBe(String(limit - index));
    }
    const limited = await t.call(method, url, { key: apiKey });
    expectError(limited, 429, "RATE_LIMITED");
    expect(Number(limited.headers["retry-after"])).toBeGreaterThanOrEqual(1);
    // Another bucket of the same key still answers.
    expect((await t.call("GET", "/v1/transfers/inbox", { key: apiKey })).statusCode).toBe(200);
  });

  it("POST /v1/transfers: the 61st call in a minute → 429, whatever the first 60 were", async () => {
    const { apiKey } = await newParties(t);
    await startOfWindow(t, MINUTE_MS);
    // Requests refused for their body (415 here) still count: the limit is checked before the body.
    for (let index = 1; index <= 60; index++) {
      const res = await t.call("POST", "/v1/transfers", { key: apiKey, body: {} });
      expect(res.statusCode).toBe(415);
    }
    const limited = await postTransfer(t, apiKey, file());
    expectError(limited, 429, "RATE_LIMITED");
    expect((await listTransfers(t, apiKey)).total).toBe(0);
    await advanceClock(t, 60);
    expect((await sendTransfer(t, apiKey, file())).status).toBe("active");
  });
});

describe("Idempotency-Key", () => {
  const body = {
    ...A2A,
    files: [{ name: "idem.bin", size: 10 }],
    message: "once",
  };

  it("presigned: same key and body → the same answer and one transfer; another body → 409", async () => {
    const { apiKey } = await newParties(t);
    const headers = { "idempotency-key": "presign-1" };
    const first = await postPresigned(t, apiKey, body, headers);
    expect(first.statusCode, first.body).toBe(201);
    const second = await postPresigned(t, apiKey, body, headers);
    expect(second.statusCode, second.body).toBe(201);
    expect(second.headers["idempotent-replayed"]).toBe("true");
    expect(second.json()).toEqual(first.json());
    expect((await listTransfers(t, apiKey)).total).toBe(1);

    const other = await postPresigned(t, apiKey, { ...body, message: "twice" }, headers);
    expectError(other, 409, "IDEMPOTENCY_CONFLICT");
    expect((await listTransfers(t, apiKey)).total).toBe(1);

    // Another key is another request.
    const fresh = await postPresigned(t, apiKey, body, { "idempotency-key": "presign-2" });
    expect(fresh.statusCode).toBe(201);
    expect(fresh.json().id).not.toBe(first.json().id);
    expect((await listTransfers(t, apiKey)).total).toBe(2);
  });

  it("presigned: the key is scoped to the account", async () => {
    const one = await newParties(t);
    const two = await newParties(t);
    const headers = { "idempotency-key": "shared-key" };
    const a = await postPresigned(t, one.apiKey, body, headers);
    const b = await postPresigned(t, two.apiKey, body, headers);
    expect(a.statusCode).toBe(201);
    expect(b.statusCode).toBe(201);
    expect(b.json().id).not.toBe(a.json().id);
    expect((await listTransfers(t, two.apiKey)).total).toBe(1);
  });

  it("multipart: the same body again → the first answer, one transfer", async () => {
    const { apiKey } = await newParties(t);
    const { payload, contentType } = await multipart(A2A, [{ name: "m.bin", data: bytes(100) }]);
    const send = () =>
      t.app.inject({
        method: "POST",
        url: "/v1/transfers",
        payload,
        headers: {
          "content-type": contentType,
          authorization: `Bearer ${apiKey}`,
          "idempotency-key": "mp-1",
        },
      });
    const first = await send();
    expect(first.statusCode, first.body).toBe(201);
    const second = await send();
    expect(second.statusCode).toBe(201);
    expect(second.json()).toEqual(first.json());
    expect((await listTransfers(t, apiKey)).total).toBe(1);
  });

  it("multipart: the same key with other files of the same length → 409, not the first answer", async () => {
    // Decisions 3.17: the same key with another body is 409 IDEMPOTENCY_CONFLICT. Two different
    // uploads whose bodies happen to have the same length are different bodies.
    const { apiKey } = await newParties(t);
    const post = async (data: Buffer) => {
      return postTransfer(t, apiKey, [{ name: "m.bin", data }], A2A, { "idempotency-key": "mp-2" });
    };
    const first = await post(bytes(100));
    expect(first.statusCode, first.body).toBe(201);
    const other = await post(bytes(100));
    expect(other.headers["idempotent-replayed"], "another upload is not replayed").toBeUndefined();
    expectError(other, 409, "IDEMPOTENCY_CONFLICT");
  });

  it("multipart: the same key with a body of another length → 409", async () => {
    const { apiKey } = await newParties(t);
    const post = async (size: number) => {
      return postTransfer(t, apiKey, [{ name: "m.bin", data: bytes(size) }], A2A, {
        "idempotency-key": "mp-3",
      });
    };
    expect((await post(100)).statusCode).toBe(201);
    expectError(await post(101), 409, "IDEMPOTENCY_CONFLICT");
    expect((await listTransfers(t, apiKey)).total).toBe(1);
  });
});
