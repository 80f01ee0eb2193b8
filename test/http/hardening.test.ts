import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestApp, type TestApp } from "../support/app.js";
import { advanceClock, expectError } from "./helpers.js";
import {
  A2A,
  blobFiles,
  bytes,
  downloadOk,
  fetchLink,
  newParties,
  postPresigned,
  postTransfer,
  presignedActive,
  sendTransfer,
  withoutHousekeeper,
} from "./transfer-helpers.js";

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => t.close());

describe("signed download links end with their transfer (finding 1)", () => {
  it("a link fetched before DELETE answers 410 right after it, before any clean-up", async () => {
    const { apiKey } = await newParties(t);
    const data = bytes(4096);
    const sent = await sendTransfer(t, apiKey, [{ name: "d.bin", data }], { max_downloads: "5" });
    const link = (await downloadOk(t, apiKey, sent.id)).files[0]?.download_url as string;
    expect((await fetchLink(t, link)).rawPayload.equals(data)).toBe(true);
    await withoutHousekeeper(t, async () => {
      const deleted = await t.call("DELETE", `/v1/transfers/${sent.id}`, { key: apiKey });
      expect(deleted.statusCode, deleted.body).toBe(200);
      const res = await fetchLink(t, link);
      expectError(res, 410, "GONE");
      expect(res.rawPayload.includes(data.subarray(0, 64))).toBe(false);
      expect(blobFiles(t, sent.id), "the data is still on disk: only the link check stopped it").toHaveLength(
        1,
      );
    });
  });

  it("a link stops at the transfer's expiry, before any clean-up", async () => {
    const { apiKey } = await newParties(t);
    const sent = await sendTransfer(t, apiKey, [{ name: "e.bin", data: bytes(100) }], { expires_in: "1h" });
    await advanceClock(t, 59 * 60);
    const link = (await downloadOk(t, apiKey, sent.id)).files[0]?.download_url as string;
    expect((await fetchLink(t, link)).statusCode).toBe(200);
    await withoutHousekeeper(t, async () => {
      await advanceClock(t, 61);
      expectError(await fetchLink(t, link), 410, "GONE");
    });
  });

  it("downloaded out: the links of every download, the last included, serve until they expire", async () => {
    const { apiKey } = await newParties(t);
    const data = bytes(500);
    const sent = await sendTransfer(t, apiKey, [{ name: "o.bin", data }], { max_downloads: "2" });
    const first = (await downloadOk(t, apiKey, sent.id)).files[0]?.download_url as string;
    const last = (await downloadOk(t, apiKey, sent.id)).files[0]?.download_url as string;
    await withoutHousekeeper(t, async () => {
      expect((await fetchLink(t, last)).rawPayload.equals(data)).toBe(true);
      expect((await fetchLink(t, first)).rawPayload.equals(data)).toBe(true);
      await advanceClock(t, 15 * 60 + 1);
      expect((await fetchLink(t, last)).statusCode).toBe(403);
    });
  });

  it("a download racing the purge never answers 5xx", async () => {
    const { apiKey } = await newParties(t);
    const sent = await sendTransfer(t, apiKey, [{ name: "r.bin", data: bytes(256 * 1024) }], {
      max_downloads: "5",
    });
    const link = (await downloadOk(t, apiKey, sent.id)).files[0]?.download_url as string;
    const deleting = t.call("DELETE", `/v1/transfers/${sent.id}`, { key: apiKey });
    const fetches = Array.from({ length: 30 }, () => fetchLink(t, link));
    await deleting;
    await t.service.housekeeper.sweep();
    const statuses = (await Promise.all([...fetches, fetchLink(t, link)])).map((res) => res.statusCode);
    expect(statuses.filter((status) => status >= 500)).toEqual([]);
    expect(statuses.at(-1)).toBe(410);
  });
});

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

describe("presigned content types are header-safe (finding 7)", () => {
  it("CR, LF or control characters in content_type → 400 at the presigned call", async () => {
    const { apiKey } = await newParties(t);
    for (const contentType of ["text/plain\r\nx-evil: 1", "text/plain\n", "a\u0007b", "tëxt/plain"]) {
      const res = await postPresigned(t, apiKey, {
        mode: "agent-to-agent",
        sender: "alice",
        recipient: "bob",
        files: [{ name: "f.txt", size: 1, content_type: contentType }],
      });
      expectError(res, 400, "VALIDATION_ERROR");
    }
  });

  it("an ordinary content type with parameters still works end to end", async () => {
    const { apiKey } = await newParties(t);
    const data = Buffer.from("hi");
    const { transfer } = await presignedActive(t, apiKey, [
      { name: "f.txt", data, content_type: "text/plain; charset=utf-8" },
    ]);
    const link = (await downloadOk(t, apiKey, transfer.id)).files[0]?.download_url as string;
    const res = await fetchLink(t, link);
    expect(res.statusCode).toBe(200);
    expect(res.headers["content-type"]).toBe("text/plain; charset=utf-8");
  });

  it("a multipart part with a control character in its content type downloads as application/octet-stream", async () => {
    const { apiKey } = await newParties(t);
    const boundary = "----ct";
    const payload = Buffer.from(
      [
        ...["sender=alice", "recipient=bob", "mode=agent-to-agent"].map((field) => {
          const [name, value] = field.split("=");
          return `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`;
        }),
        `--${boundary}\r\nContent-Disposition: form-data; name="files"; filename="x.bin"\r\n`,
        "Content-Type: text/pl\u0001ain\r\n\r\nabc\r\n",
        `--${boundary}--\r\n`,
      ].join(""),
      "latin1",
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
    expect(res.statusCode, res.body).toBe(201);
    const link = (await downloadOk(t, apiKey, res.json().id)).files[0]?.download_url as string;
    const got = await fetchLink(t, link);
    expect(got.statusCode).toBe(200);
    expect(got.headers["content-type"]).toBe("application/octet-stream");
    expect(got.body).toBe("abc");
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
