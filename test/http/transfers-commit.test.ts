import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestApp, type TestApp } from "../support/app.js";
import {
  A2A,
  bytes,
  newParties,
  postPresigned,
  postTransfer,
  type TransferBody,
} from "./transfer-helpers.js";

/**
 * Once a write is committed its answer is known: a read model that lags (here: stopped outright)
 * delays only what later reads see, never the answer, and a retry with the same Idempotency-Key
 * returns that answer without a second effect.
 */
describe("a committed write with its read models stalled", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(async () => t?.close());

  async function createdIn(accountId: string): Promise<number> {
    const events = await t.service.store.readAll(null, 100_000);
    return events.filter((e) => e.type === "TransferCreated" && e.data.senderAccountId === accountId).length;
  }

  it("answers 201 from the decided transfer, and the retry returns the same answer with one transfer recorded", async () => {
    const { apiKey, accountId } = await newParties(t);
    await t.service.engine.stop();
    try {
      const headers = { "idempotency-key": "stalled-1" };
      const file = [{ name: "a.bin", data: bytes(1000) }];
      const first = await postTransfer(t, apiKey, file, { ...A2A, max_downloads: "2" }, headers);
      expect(first.statusCode, first.body).toBe(201);
      const created = first.json<TransferBody>();
      expect(created).toMatchObject({ status: "active", max_downloads: 2, downloads: 0, total_size: 1000 });

      const retry = await postTransfer(t, apiKey, file, { ...A2A, max_downloads: "2" }, headers);
      expect(retry.statusCode).toBe(201);
      expect(retry.headers["idempotent-replayed"]).toBe("true");
      expect(retry.json()).toEqual(created);
      expect(await createdIn(accountId)).toBe(1);

      const presigned = await postPresigned(
        t,
        apiKey,
        { ...A2A, files: [{ name: "b.bin", size: 10 }] },
        { "idempotency-key": "stalled-2" },
      );
      expect(presigned.statusCode, presigned.body).toBe(201);
      expect(await createdIn(accountId)).toBe(2);
    } finally {
      await t.service.engine.start();
    }
    // The read models catch up with what was answered.
    const list = await t.call("GET", "/v1/transfers?direction=sent", { key: apiKey });
    expect(list.json().total).toBe(2);
  });
});
