import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestApp, type TestApp } from "../support/app.js";
import { expectError } from "./helpers.js";
import {
  A2A,
  bytes,
  downloadOk,
  fetchLink,
  newParties,
  postTransfer,
  sendTransfer,
} from "./transfer-helpers.js";

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => t.close());

/** Runs `body` with the housekeeper stopped: what is checked is the answer before any clean-up. */
async function _withoutHousekeeper(body: () => Promise<void>) {
  await t.service.housekeeper.stop();
  try {
    await body();
  } finally {
    t.service.housekeeper.start();
  }
}

describe("bad input is the client's error, never 5xx (finding 2)", () => {
  it("bad percent-encoding in a path → 400", async () => {
    const { apiKey } = await t.newAccount();
    expectError(await t.call("GET", "/v1/agents/%ZZ", { key: apiKey }), 400, "VALIDATION_ERROR");
    expectError(await t.call("GET", "/v1/transfers/%E0%A4%A", { key: apiKey }), 400, "VALIDATION_ERROR");
  });

  it("a 5,000-character path parameter → 4xx in the error shape", async () => {
    const { apiKey } = await t.newAccount();
    const res = await t.call("GET", `/v1/agents/${"a".repeat(5000)}`, { key: apiKey });
    expect(res.statusCode).toBeLessThan(500);
    expectError(res, res.statusCode, res.json().error.code);
    const link = await t.call("GET", `/v1/files/${"a".repeat(5000)}`);
    expect(link.statusCode).toBeLessThan(500);
    expectError(link, link.statusCode, link.json().error.code);
  });

  it("a multipart body without its closing boundary → 400", async () => {
    const { apiKey } = await newParties(t);
    const boundary = "----cut";
    const payload = Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="sender"\r\n\r\nalice\r\n--${boundary}\r\n` +
        `Content-Disposition: form-data; name="files"; filename="a.txt"\r\nContent-Type: text/plain\r\n\r\nhalf a file`,
    );
    const res = await t.app.inject({
      method: "POST",
      url: "/v1/transfers",
      payload,
      headers: {
        authorization: `Bearer ${apiKey}`,
        "content-type": `multipart/form-data; boundary=${boundary}`,
      },
    });
    expectError(res, 400, "VALIDATION_ERROR");
  });

  it("JSON nested 100,000 deep → 400 on every JSON route", async () => {
    const { apiKey } = await t.newAccount();
    const deep = `${"[".repeat(100_000)}${"]".repeat(100_000)}`;
    const deepObject = `${'{"a":'.repeat(100_000)}1${"}".repeat(100_000)}`;
    for (const url of ["/v1/agents/register", "/v1/api-keys", "/v1/transfers/presigned"]) {
      for (const payload of [deep, deepObject]) {
        const res = await t.app.inject({
          method: "POST",
          url,
          payload,
          headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
        });
        expectError(res, 400, "VALIDATION_ERROR");
      }
    }
  });

  it("a transfer form's metadata field is held to the same JSON rules", async () => {
    const { apiKey } = await newParties(t);
    const file = [{ name: "m.txt", data: bytes(3) }];
    for (const metadata of [`${'{"a":'.repeat(100_000)}1${"}".repeat(100_000)}`, '{"k":"\\ud800"}']) {
      const res = await postTransfer(t, apiKey, file, { ...A2A, metadata });
      expectError(res, 400, "VALIDATION_ERROR");
    }
  });

  it("lone UTF-16 surrogates → 400 before they reach the database", async () => {
    const { apiKey } = await t.newAccount();
    for (const payload of [
      '{"agent_id":"x\\ud800"}',
      '{"agent_id":"ok","name":"\\udc00"}',
      '{"\\ud800":1}',
    ]) {
      const res = await t.app.inject({
        method: "POST",
        url: "/v1/agents/register",
        payload,
        headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
      });
      expectError(res, 400, "VALIDATION_ERROR");
    }
    // A proper pair (an emoji) is fine.
    const fine = await t.call("POST", "/v1/agents/register", {
      key: apiKey,
      body: { agent_id: "emoji", name: "\ud83d\ude00" },
    });
    expect(fine.statusCode, fine.body).toBe(201);
  });
});

describe("signed URL tokens parse strictly (finding 8)", () => {
  it("<payload>.<mac> with anything after it → 403", async () => {
    const { apiKey } = await newParties(t);
    const sent = await sendTransfer(t, apiKey, [{ name: "s.bin", data: bytes(10) }], { max_downloads: "5" });
    const link = (await downloadOk(t, apiKey, sent.id)).files[0]?.download_url as string;
    expect((await fetchLink(t, link)).statusCode).toBe(200);
    for (const bad of [
      `${link}.garbage`,
      `${link}.`,
      `${link}=`,
      `${link}%20`,
      `${link.replace("/v1/files/", "/v1/files/.")}`,
    ]) {
      expectError(await fetchLink(t, bad), 403, "FORBIDDEN");
    }
  });
});
