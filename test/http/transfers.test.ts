import type { LightMyRequestResponse } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestApp, type TestApp } from "../support/app.js";
import { advanceClock, detailPaths, expectError, registerPending } from "./helpers.js";
import {
  A2A,
  blobFiles,
  bytes,
  confirm,
  DOWNLOAD_KEYS,
  type DownloadBody,
  downloadOk,
  expectTransferShape,
  type Fields,
  type FilePart,
  FREE,
  fetchLink,
  getTransfer,
  listTransfers,
  MiB,
  multipart,
  newParties,
  type PresignedBody,
  postPresigned,
  postTransfer,
  presignedActive,
  presignedOk,
  putUpload,
  sendTransfer,
  type TransferBody,
  tempFiles,
  transferDirs,
} from "./transfer-helpers.js";

let t: TestApp;
let base: string;
beforeAll(async () => {
  t = await startTestApp();
  base = t.service.config.publicBaseUrl;
});
afterAll(async () => t.close());

const HOUR_MS = 3600 * 1000;
const small = (name = "a.txt", text = "hello"): FilePart => ({
  name,
  data: Buffer.from(text),
  type: "text/plain",
});

/** What the blob store held before a refused request: afterwards nothing new may be there. */
function snapshotBlobs(): () => void {
  const before = new Set(transferDirs(t));
  return () => {
    const added = transferDirs(t).filter((dir) => !before.has(dir));
    expect(added, "no transfer directory left behind").toEqual([]);
    expect(tempFiles(t), "no partial upload left behind").toEqual([]);
  };
}

async function expectNoTransfers(key: string) {
  const list = await listTransfers(t, key);
  expect(list.total).toBe(0);
  expect(list.transfers).toEqual([]);
}

/** Fills a free account's storage with one pending presigned transfer declaring `total` bytes. */
async function fillStorage(key: string, total: number): Promise<PresignedBody> {
  const files: { name: string; size: number }[] = [];
  for (let left = total, index = 0; left > 0; index++) {
    const size = Math.min(left, FREE.maxFileSize);
    files.push({ name: `fill-${index}.bin`, size });
    left -= size;
  }
  return presignedOk(t, key, files);
}

describe("POST /v1/transfers: success", () => {
  it("201: every field of spec 2.3, numbers as JSON numbers, active, downloads 0, defaults", async () => {
    const { apiKey } = await newParties(t);
    const before = t.service.clock.now().getTime();
    const res = await postTransfer(t, apiKey, [
      { name: "report.pdf", data: bytes(1234), type: "application/pdf" },
      { name: "notes.txt", data: Buffer.from("some notes"), type: "text/plain" },
      { name: "raw.bin", data: bytes(7) },
    ]);
    expect(res.statusCode, res.body).toBe(201);
    expect(res.headers["content-type"]).toMatch(/^application\/json/);
    const body = res.json() as TransferBody;
    expectTransferShape(body);
    expect(body).toMatchObject({
      url: `${base}/t/${body.id}`,
      api_url: `${base}/v1/transfers/${body.id}/download`,
      status: "active",
      pending_reason: null,
      mode: "agent-to-agent",
      sender: "alice",
      recipient: "bob",
      files: [
        { name: "report.pdf", size: 1234, type: "application/pdf" },
        { name: "notes.txt", size: 10, type: "text/plain" },
        { name: "raw.bin", size: 7, type: "application/octet-stream" },
      ],
      file_count: 3,
      total_size: 1251,
      max_downloads: 10,
      downloads: 0,
      is_encrypted: false,
      auto_delete: true,
      message: null,
    });
    const created = Date.parse(body.created_at);
    expect(created).toBeGreaterThanOrEqual(before - 1000);
    expect(created).toBeLessThanOrEqual(t.service.clock.now().getTime() + 1000);
    // expires_in defaults to 24h.
    expect(Math.abs(Date.parse(body.expires_at) - created - 24 * HOUR_MS)).toBeLessThan(2000);

    // Read your writes: the transfer is there at once, with the same fields.
    const got = await getTransfer(t, apiKey, body.id);
    expect(got.statusCode, got.body).toBe(200);
    expect(got.json()).toEqual(body);
  });

  it("form strings come back as numbers and booleans; message and expires_in are kept", async () => {
    const { apiKey } = await newParties(t);
    const body = await sendTransfer(t, apiKey, [small()], {
      max_downloads: "3",
      auto_delete: "false",
      is_encrypted: "true",
      encrypted_key: "a2V5",
      message: "here you go",
      expires_in: "1h",
      metadata: JSON.stringify({ job: 42 }),
    });
    expectTransferShape(body);
    expect(body.max_downloads).toBe(3);
    expect(body.auto_delete).toBe(false);
    expect(body.is_encrypted).toBe(true);
    expect(body.message).toBe("here you go");
    expect(Math.abs(Date.parse(body.expires_at) - Date.parse(body.created_at) - HOUR_MS)).toBeLessThan(2000);
  });

  it.each(["1", "1000"])("max_downloads %s is accepted (range 1 to 1000)", async (value) => {
    const { apiKey } = await newParties(t);
    const body = await sendTransfer(t, apiKey, [small()], { max_downloads: value });
    expect(body.max_downloads).toBe(Number(value));
  });

  it.each(["1h", "12h", "24h"])("expires_in %s is within the free plan's retention", async (value) => {
    const { apiKey } = await newParties(t);
    const body = await sendTransfer(t, apiKey, [small()], { expires_in: value });
    const hours = Number.parseInt(value, 10);
    expect(
      Math.abs(Date.parse(body.expires_at) - Date.parse(body.created_at) - hours * HOUR_MS),
    ).toBeLessThan(2000);
  });

  it("retention follows the plan: builder allows 14d, not 30d", async () => {
    const { apiKey } = await newParties(t, "builder");
    const ok = await sendTransfer(t, apiKey, [small()], { expires_in: "14d" });
    expect(Date.parse(ok.expires_at) - Date.parse(ok.created_at)).toBeGreaterThan(14 * 24 * HOUR_MS - 2000);
    const error = expectError(
      await postTransfer(t, apiKey, [small()], { ...A2A, expires_in: "30d" }),
      400,
      "VALIDATION_ERROR",
    );
    expect(detailPaths(error)).toContain("expires_in");
  });

  it("human-to-agent: a free-form sender to an agent of the account", async () => {
    const { apiKey } = await newParties(t);
    const body = await sendTransfer(t, apiKey, [small()], {
      mode: "human-to-agent",
      sender: "Jane Doe <jane@example.com>",
    });
    expect(body).toMatchObject({
      mode: "human-to-agent",
      sender: "Jane Doe <jane@example.com>",
      status: "active",
    });
  });

  it("files come back byte-exact through download and the signed links (0 B to ~1 MiB, several files)", async () => {
    const { apiKey } = await newParties(t);
    const files: FilePart[] = [
      { name: "empty.bin", data: Buffer.alloc(0) },
      { name: "one.bin", data: bytes(1), type: "application/octet-stream" },
      { name: "random.dat", data: bytes(65_537), type: "application/x-random" },
      { name: "big.bin", data: bytes(MiB + 17), type: "application/octet-stream" },
      { name: "text.txt", data: Buffer.from("plain text\n"), type: "text/plain" },
    ];
    const transfer = await sendTransfer(t, apiKey, files);
    expect(transfer.files.map((file) => [file.name, file.size])).toEqual(
      files.map((file) => [file.name, file.data.length]),
    );
    expect(transfer.total_size).toBe(files.reduce((sum, file) => sum + file.data.length, 0));

    const dl = await downloadOk(t, apiKey, transfer.id);
    expect(Object.keys(dl).sort()).toEqual(DOWNLOAD_KEYS);
    expect(dl.files.map((file) => [file.file_name, file.size])).toEqual(
      files.map((file) => [file.name, file.data.length]),
    );
    for (const [index, file] of dl.files.entries()) {
      const expected = files[index] as FilePart;
      expect(file.download_url.startsWith(`${base}/v1/files/`)).toBe(true);
      const res = await fetchLink(t, file.download_url);
      expect(res.statusCode, `${file.file_name}: ${res.statusCode}`).toBe(200);
      expect(res.headers["content-length"]).toBe(String(expected.data.length));
      expect(res.headers["content-type"]).toBe(expected.type ?? "application/octet-stream");
      expect(Buffer.compare(res.rawPayload, Buffer.from(expected.data)), file.file_name).toBe(0);
    }
    // The links are the credential: they need no Authorization, and a link can be fetched again.
    const again = await fetchLink(t, dl.files[2]?.download_url as string);
    expect(Buffer.compare(again.rawPayload, Buffer.from(files[2]?.data as Uint8Array))).toBe(0);
  });

  it("a tampered signed link is refused and serves nothing", async () => {
    const { apiKey } = await newParties(t);
    const transfer = await sendTransfer(t, apiKey, [small("s.txt", "secret")]);
    const dl = await downloadOk(t, apiKey, transfer.id);
    const url = dl.files[0]?.download_url as string;
    const tampered = `${url.slice(0, -3)}${url.endsWith("AAA") ? "BBB" : "AAA"}`;
    const res = await fetchLink(t, tampered);
    expect([403, 404]).toContain(res.statusCode);
    expect(res.body).not.toContain("secret");
  });

  it("UTF-8 file names round-trip; the 255-byte limit counts bytes, not characters", async () => {
    const { apiKey } = await newParties(t);
    const unicode = "résumé-日本語-✓.txt";
    const nearLimit = `${"é".repeat(127)}`; // 254 bytes
    const transfer = await sendTransfer(t, apiKey, [
      { name: unicode, data: Buffer.from("u") },
      { name: nearLimit, data: Buffer.from("n") },
    ]);
    expect(transfer.files.map((file) => file.name)).toEqual([unicode, nearLimit]);
    const dl = await downloadOk(t, apiKey, transfer.id);
    expect(dl.files.map((file) => file.file_name)).toEqual([unicode, nearLimit]);
    const link = await fetchLink(t, dl.files[0]?.download_url as string);
    expect(link.statusCode).toBe(200);
    expect(link.headers["content-disposition"]).toContain(`UTF-8''${encodeURIComponent(unicode)}`);

    const check = snapshotBlobs();
    const over = await postTransfer(t, apiKey, [{ name: "é".repeat(128), data: Buffer.from("x") }]); // 256 bytes
    expect(detailPaths(expectError(over, 400, "VALIDATION_ERROR")).join()).toMatch(/files/);
    check();
  });

  it("is_encrypted with encrypted_key, per-file encryption_iv and a signature: download returns them", async () => {
    const { apiKey, alice, bob } = await newParties(t);
    const transfer = await sendTransfer(
      t,
      apiKey,
      [
        { name: "a.enc", data: bytes(40) },
        { name: "b.enc", data: bytes(50) },
      ],
      {
        is_encrypted: "true",
        encrypted_key: "ZW5jcnlwdGVkLWtleQ==",
        encryption_iv: ["aXYtb25l", "aXYtdHdv"],
        sender_signature: "c2lnbmF0dXJl",
      },
    );
    expect(transfer.is_encrypted).toBe(true);
    const dl = await downloadOk(t, apiKey, transfer.id, "bob");
    expect(dl).toMatchObject({
      is_encrypted: true,
      encrypted_key: "ZW5jcnlwdGVkLWtleQ==",
      encryption_algorithm: "AES-256-GCM",
      sender_signature: "c2lnbmF0dXJl",
      sender_public_key: alice.public_key,
      recipient_key_version: bob.key_version,
      channel_id: null,
      encryption_salt: null,
    });
    expect(dl.files.map((file) => [file.file_name, file.encryption_iv])).toEqual([
      ["a.enc", "aXYtb25l"],
      ["b.enc", "aXYtdHdv"],
    ]);
  });

  it("an unencrypted transfer has null encryption fields in the download answer", async () => {
    const { apiKey } = await newParties(t);
    const transfer = await sendTransfer(t, apiKey, [small()]);
    const dl = await downloadOk(t, apiKey, transfer.id);
    for (const key of [
      "encrypted_key",
      "encryption_algorithm",
      "recipient_key_version",
      "sender_signature",
      "channel_id",
      "encryption_salt",
      "sender_public_key",
      "recipient_public_key",
    ] as const) {
      expect(dl[key], key).toBeNull();
    }
    expect(dl.files[0]?.encryption_iv).toBeNull();
    expect(dl.is_encrypted).toBe(false);
  });
});

describe("signed download links honour Range", () => {
  let data: Buffer;
  let link: string;
  beforeAll(async () => {
    const { apiKey } = await newParties(t);
    data = bytes(1000);
    const transfer = await sendTransfer(t, apiKey, [
      { name: "r.bin", data, type: "application/octet-stream" },
    ]);
    link = (await downloadOk(t, apiKey, transfer.id)).files[0]?.download_url as string;
  });

  it.each([
    ["bytes=0-99", 0, 99],
    ["bytes=100-199", 100, 199],
    ["bytes=990-", 990, 999],
    ["bytes=-10", 990, 999],
    ["bytes=500-5000", 500, 999],
    ["bytes=999-999", 999, 999],
    ["bytes=-5000", 0, 999],
  ])("%s → 206 with Content-Range and exactly those bytes", async (range, start, end) => {
    const res = await fetchLink(t, link, { range });
    expect(res.statusCode, res.body).toBe(206);
    expect(res.headers["content-range"]).toBe(`bytes ${start}-${end}/1000`);
    expect(res.headers["content-length"]).toBe(String(end - start + 1));
    expect(res.headers["accept-ranges"]).toBe("bytes");
    expect(Buffer.compare(res.rawPayload, data.subarray(start, end + 1))).toBe(0);
  });

  it.each(["bytes=1000-", "bytes=5000-6000", "bytes=-0"])("%s → 416 with bytes */1000", async (range) => {
    const res = await fetchLink(t, link, { range });
    expect(res.statusCode, res.body).toBe(416);
    expect(res.headers["content-range"]).toBe("bytes */1000");
    expect(res.json().error.status).toBe(416);
  });

  it("a suffix Range on an empty file → 416 bytes */0 (RFC 9110: a zero-length file satisfies no range)", async () => {
    const { apiKey } = await newParties(t);
    const transfer = await sendTransfer(t, apiKey, [{ name: "empty.bin", data: Buffer.alloc(0) }]);
    const empty = (await downloadOk(t, apiKey, transfer.id)).files[0]?.download_url as string;
    for (const range of ["bytes=0-", "bytes=-10", "bytes=-1"]) {
      const res = await fetchLink(t, empty, { range });
      expect(res.statusCode, `${range}: ${res.body}`).toBe(416);
      expect(res.headers["content-range"], range).toBe("bytes */0");
    }
    expect((await fetchLink(t, empty)).statusCode).toBe(200);
  });

  it("without Range the whole file is 200 and advertises Accept-Ranges", async () => {
    const res = await fetchLink(t, link);
    expect(res.statusCode).toBe(200);
    expect(res.headers["accept-ranges"]).toBe("bytes");
    expect(Buffer.compare(res.rawPayload, data)).toBe(0);
  });
});

describe("POST /v1/transfers: 400 VALIDATION_ERROR, and nothing stored", () => {
  const cases: [string, Fields, FilePart[] | null, string][] = [
    ["missing sender", { recipient: "bob", mode: "agent-to-agent" }, null, "sender"],
    ["missing recipient", { sender: "alice", mode: "agent-to-agent" }, null, "recipient"],
    ["missing mode", { sender: "alice", recipient: "bob" }, null, "mode"],
    ["missing files", A2A, [], "files"],
    ["bad mode", { ...A2A, mode: "agent-to-robot" }, null, "mode"],
    ["max_downloads 0", { ...A2A, max_downloads: "0" }, null, "max_downloads"],
    ["max_downloads 1001", { ...A2A, max_downloads: "1001" }, null, "max_downloads"],
    ["max_downloads abc", { ...A2A, max_downloads: "abc" }, null, "max_downloads"],
    ["max_downloads 2.5", { ...A2A, max_downloads: "2.5" }, null, "max_downloads"],
    ["bad expires_in 2h", { ...A2A, expires_in: "2h" }, null, "expires_in"],
    ["bad expires_in 1d", { ...A2A, expires_in: "1d" }, null, "expires_in"],
    ["expires_in 7d beyond the free plan's 24h retention", { ...A2A, expires_in: "7d" }, null, "expires_in"],
    ["expires_in 90d beyond the free plan's retention", { ...A2A, expires_in: "90d" }, null, "expires_in"],
    ["sender not an agent", { ...A2A, sender: "carol" }, null, "sender"],
    ["unknown recipient", { ...A2A, recipient: "nobody" }, null, "recipient"],
    ["metadata not JSON", { ...A2A, metadata: "{not json" }, null, "metadata"],
    ["metadata not an object", { ...A2A, metadata: "[1,2]" }, null, "metadata"],
    ["message over 4,000 characters", { ...A2A, message: "m".repeat(4001) }, null, "message"],
    ["is_encrypted not a boolean", { ...A2A, is_encrypted: "maybe" }, null, "is_encrypted"],
    // Spec 4.9: as on the presigned path (issue 35: once only there).
    ["is_encrypted without encrypted_key", { ...A2A, is_encrypted: "true" }, null, "encrypted_key"],
    ["auto_delete not a boolean", { ...A2A, auto_delete: "yes please" }, null, "auto_delete"],
    ["file name over 255 bytes", A2A, [{ name: `${"n".repeat(252)}.txt`, data: Buffer.from("x") }], "files"],
  ];

  it.each(cases)("%s → 400 naming the field", async (_name, fields, files, path) => {
    const { apiKey } = await newParties(t);
    const check = snapshotBlobs();
    const res = await postTransfer(t, apiKey, files ?? [small("f.txt"), small("g.txt")], fields);
    const error = expectError(res, 400, "VALIDATION_ERROR");
    expect(
      detailPaths(error).some((p) => p.startsWith(path)),
      `${detailPaths(error)} names ${path}`,
    ).toBe(true);
    check();
    await expectNoTransfers(apiKey);
  });

  it.each([
    ["sender", { ...A2A, sender: "waiting" }],
    ["recipient", { ...A2A, recipient: "waiting" }],
  ])("a pending (not connected) agent as %s → 400 naming it", async (path, fields) => {
    const { apiKey } = await newParties(t, "builder"); // room for a third agent
    await registerPending(t, apiKey, "waiting");
    const check = snapshotBlobs();
    const error = expectError(await postTransfer(t, apiKey, [small()], fields), 400, "VALIDATION_ERROR");
    expect(detailPaths(error)).toContain(path);
    check();
    await expectNoTransfers(apiKey);
  });
});

describe("POST /v1/transfers: malformed or oversized multipart bodies are the client's error, never a 500", () => {
  /** A refused upload: a 4xx in the one error body (not INTERNAL_ERROR), nothing stored or counted. */
  async function expectRefused(
    res: LightMyRequestResponse,
    statuses: number[],
    key: string,
    check: () => void,
  ) {
    // Soft: the clean-up checks below run (and report) even when the status is wrong.
    expect.soft(statuses, `${res.statusCode} ${res.body}`).toContain(res.statusCode);
    expect.soft(res.json().error.code).not.toBe("INTERNAL_ERROR");
    if (statuses.includes(res.statusCode)) expectError(res, res.statusCode, res.json().error.code);
    check();
    await expectNoTransfers(key);
  }

  const inject = (key: string, payload: Buffer, contentType: string) =>
    t.app.inject({
      method: "POST",
      url: "/v1/transfers",
      payload,
      headers: { "content-type": contentType, authorization: `Bearer ${key}` },
    });

  it("1,001 files in one transfer → 400 (decisions 7.3; the presigned flow allows 1,000 too)", async () => {
    const { apiKey } = await newParties(t);
    const check = snapshotBlobs();
    const files = Array.from({ length: 1001 }, (_, index) => small(`f${index}.txt`));
    await expectRefused(await postTransfer(t, apiKey, files), [400], apiKey, check);
  });

  it("1,000 files in nested folders in one transfer are fine", async () => {
    const { apiKey } = await newParties(t, "builder");
    const files = Array.from({ length: 1000 }, (_, index) =>
      small(`dir/${index % 7}/f${index}.txt`, `${index}`),
    );
    const transfer = await sendTransfer(t, apiKey, files);
    expect(transfer.file_count).toBe(1000);
    expect(transfer.files[999]?.name).toBe("dir/5/f999.txt");
  });

  it("too many form fields → 400", async () => {
    const { apiKey } = await newParties(t);
    const fields: Fields = { ...A2A };
    for (let index = 0; index < 1100; index++) fields[`extra_${index}`] = "x";
    const check = snapshotBlobs();
    await expectRefused(await postTransfer(t, apiKey, [small()], fields), [400, 413], apiKey, check);
  });

  it("a body cut off before its closing boundary → 400", async () => {
    const { apiKey } = await newParties(t);
    const { payload, contentType } = await multipart(A2A, [{ name: "cut.bin", data: bytes(5000) }]);
    const check = snapshotBlobs();
    await expectRefused(await inject(apiKey, payload.subarray(0, 3000), contentType), [400], apiKey, check);
  });

  it("multipart/form-data without a boundary, or with the wrong one → 400 or 415", async () => {
    const { apiKey } = await newParties(t);
    const { payload } = await multipart(A2A, [small()]);
    const check = snapshotBlobs();
    await expectRefused(await inject(apiKey, payload, "multipart/form-data"), [400, 415], apiKey, check);
    await expectRefused(
      await inject(apiKey, payload, "multipart/form-data; boundary=not-the-boundary"),
      [400, 415],
      apiKey,
      check,
    );
  });

  it.each([
    ["a form field", { ...A2A, message: "a\u0000b" }, [small()]],
    ["a file name", A2A, [small("a\u0000b.txt")]],
  ] as [string, Fields, FilePart[]][])(
    "a NUL character in %s → 400 VALIDATION_ERROR, as in JSON bodies",
    async (_name, fields, files) => {
      const { apiKey } = await newParties(t);
      const check = snapshotBlobs();
      const res = await postTransfer(t, apiKey, files, fields);
      expect.soft(res.statusCode, res.body).toBe(400);
      if (res.statusCode === 400) expectError(res, 400, "VALIDATION_ERROR");
      check();
      await expectNoTransfers(apiKey);
    },
  );

  it.each([
    "../../etc/passwd",
    "/etc/passwd",
    "dir\\x.txt",
    "a/./b.txt",
    "a//b.txt",
    "a/",
    "a/\u0085b",
    `${"d/".repeat(32)}f`,
    `${"d".repeat(256)}/f`,
  ])("a hostile relative name %j → 400 VALIDATION_ERROR, nothing stored", async (name) => {
    const { apiKey } = await newParties(t);
    const check = snapshotBlobs();
    expectError(await postTransfer(t, apiKey, [small(name)]), 400, "VALIDATION_ERROR");
    check();
  });
});

describe("POST /v1/transfers: 401, 415", () => {
  it("no key or an unknown key → 401, nothing stored", async () => {
    const check = snapshotBlobs();
    expectError(await postTransfer(t, null, [small()]), 401, "UNAUTHORIZED");
    expectError(await postTransfer(t, "hnd_notakey", [small()]), 401, "UNAUTHORIZED");
    check();
  });

  it("a JSON body → 415 UNSUPPORTED_MEDIA_TYPE", async () => {
    const { apiKey } = await newParties(t);
    const res = await t.call("POST", "/v1/transfers", {
      key: apiKey,
      body: { sender: "alice", recipient: "bob", mode: "agent-to-agent", files: [] },
    });
    expectError(res, 415, "UNSUPPORTED_MEDIA_TYPE");
    const text = await t.call("POST", "/v1/transfers", {
      key: apiKey,
      body: "sender=alice",
      headers: { "content-type": "text/plain" },
    });
    expectError(text, 415, "UNSUPPORTED_MEDIA_TYPE");
    await expectNoTransfers(apiKey);
  });
});

describe("POST /v1/transfers: 413 FILE_TOO_LARGE", () => {
  it("a file over the free plan's 50 MiB → 413; the files already received are removed", async () => {
    const { apiKey } = await newParties(t);
    const check = snapshotBlobs();
    const res = await postTransfer(t, apiKey, [
      { name: "fine.txt", data: bytes(1000) },
      { name: "too-big.bin", data: Buffer.alloc(FREE.maxFileSize + 1) },
    ]);
    expectError(res, 413, "FILE_TOO_LARGE");
    check();
    await expectNoTransfers(apiKey);
  });

  it("storage: exactly 50 MiB fits; once the 250 MiB are held, one more byte → 413 and nothing is kept", async () => {
    const { apiKey } = await newParties(t);
    const exact = await sendTransfer(t, apiKey, [
      { name: "exact.bin", data: Buffer.alloc(FREE.maxFileSize) },
    ]);
    expect(exact.total_size).toBe(FREE.maxFileSize);
    // The rest of the storage is held by a presigned transfer's declared sizes (decisions 3.14).
    await fillStorage(apiKey, FREE.storageBytes - FREE.maxFileSize);

    const check = snapshotBlobs();
    const res = await postTransfer(t, apiKey, [{ name: "one-more.bin", data: Buffer.from("x") }]);
    expectError(res, 413, "FILE_TOO_LARGE");
    check();
    expectError(
      await postPresigned(t, apiKey, {
        ...A2A,
        files: [{ name: "one-more.bin", size: 1 }],
      }),
      413,
      "FILE_TOO_LARGE",
    );
    const list = await listTransfers(t, apiKey);
    expect(list.total).toBe(2);
  });

  it("the storage left is counted to the byte, across the files of one upload", async () => {
    const { apiKey } = await newParties(t);
    await fillStorage(apiKey, FREE.storageBytes - 10);
    const check = snapshotBlobs();
    expectError(
      await postTransfer(t, apiKey, [
        { name: "a.bin", data: bytes(6) },
        { name: "b.bin", data: bytes(5) },
      ]),
      413,
      "FILE_TOO_LARGE",
    );
    check();
    const ok = await sendTransfer(t, apiKey, [
      { name: "a.bin", data: bytes(6) },
      { name: "b.bin", data: bytes(4) },
    ]);
    expect(ok.total_size).toBe(10);
    expectError(await postTransfer(t, apiKey, [{ name: "c.bin", data: bytes(1) }]), 413, "FILE_TOO_LARGE");
  });
});

describe("POST /v1/transfers: races for the last of a quota", () => {
  it("two uploads racing for the last bytes of storage: exactly one is kept", async () => {
    const { apiKey } = await newParties(t);
    await fillStorage(apiKey, FREE.storageBytes - 100);
    const before = new Set(transferDirs(t));
    const answers = await Promise.all([
      postTransfer(t, apiKey, [{ name: "a.bin", data: bytes(60) }]),
      postTransfer(t, apiKey, [{ name: "b.bin", data: bytes(60) }]),
    ]);
    expect(answers.map((res) => res.statusCode).sort()).toEqual([201, 413]);
    const winner = answers.find((res) => res.statusCode === 201)?.json() as TransferBody;
    expect(transferDirs(t).filter((dir) => !before.has(dir))).toEqual([winner.id]);
    expect(tempFiles(t)).toEqual([]);
    expect((await listTransfers(t, apiKey)).total).toBe(2);
  });

  it("uploads racing for the last transfers of the month: exactly the quota is kept", async () => {
    const { apiKey } = await newParties(t);
    for (let index = 0; index < FREE.transfersPerMonth - 2; index++) {
      await presignedOk(t, apiKey, [{ name: `p${index}`, size: 1 }]);
    }
    const answers = await Promise.all(
      Array.from({ length: 5 }, (_, index) => postTransfer(t, apiKey, [small(`race${index}.txt`)])),
    );
    expect(answers.map((res) => res.statusCode).sort()).toEqual([201, 201, 403, 403, 403]);
    expect((await listTransfers(t, apiKey)).total).toBe(FREE.transfersPerMonth);
  });
});

describe("POST /v1/transfers/presigned", () => {
  it("201: id, upload_urls (file_id, file_name, upload_url, method PUT, headers), confirm_url, expires_at", async () => {
    const { apiKey } = await newParties(t);
    const res = await postPresigned(t, apiKey, {
      ...A2A,
      files: [
        { name: "a.bin", size: 10, content_type: "application/x-a" },
        { name: "b.txt", size: 0 },
      ],
    });
    expect(res.statusCode, res.body).toBe(201);
    const body = res.json() as PresignedBody;
    expect(Object.keys(body).sort()).toEqual(["confirm_url", "expires_at", "id", "upload_urls"]);
    expect(body.id).toMatch(/^tr_/);
    expect(body.confirm_url).toBe(`${base}/v1/transfers/${body.id}/confirm`);
    expect(Date.parse(body.expires_at)).toBeGreaterThan(t.service.clock.now().getTime());
    expect(body.upload_urls).toHaveLength(2);
    for (const [index, upload] of body.upload_urls.entries()) {
      expect(Object.keys(upload).sort()).toEqual([
        "file_id",
        "file_name",
        "headers",
        "method",
        "resumable_url",
        "upload_url",
      ]);
      expect(upload.resumable_url).toBe(upload.upload_url);
      expect(upload.file_name).toBe(["a.bin", "b.txt"][index]);
      expect(upload.method).toBe("PUT");
      expect(upload.upload_url.startsWith(`${base}/v1/uploads/`)).toBe(true);
      expect(typeof upload.file_id).toBe("string");
      expect(typeof upload.headers).toBe("object");
    }
    expect(body.upload_urls[0]?.headers["content-type"]).toBe("application/x-a");
    expect(new Set(body.upload_urls.map((upload) => upload.file_id)).size).toBe(2);

    const got = await getTransfer(t, apiKey, body.id);
    expect(got.statusCode).toBe(200);
    const transfer = got.json() as TransferBody;
    expectTransferShape(transfer);
    expect(transfer).toMatchObject({
      status: "pending",
      auto_delete: false,
      downloads: 0,
      max_downloads: 10,
      total_size: 10,
      files: [
        { name: "a.bin", size: 10, type: "application/x-a" },
        { name: "b.txt", size: 0, type: "application/octet-stream" },
      ],
    });
  });

  it("PUT each file (200), confirm → 200 active, confirm again → the same transfer, bytes exact", async () => {
    const { apiKey } = await newParties(t);
    const one = bytes(4096);
    const two = bytes(123_457);
    const presigned = await presignedOk(t, apiKey, [
      { name: "one.bin", size: one.length },
      { name: "two.bin", size: two.length, content_type: "application/x-two" },
    ]);
    const [u1, u2] = presigned.upload_urls as [
      PresignedBody["upload_urls"][0],
      PresignedBody["upload_urls"][0],
    ];
    const put1 = await putUpload(t, u1, one);
    expect(put1.statusCode, put1.body).toBe(200);
    expect(put1.json()).toEqual({ file_id: u1.file_id, size: one.length });
    expect((await putUpload(t, u2, two)).statusCode).toBe(200);

    const first = await confirm(t, apiKey, presigned.id);
    expect(first.statusCode, first.body).toBe(200);
    const active = first.json() as TransferBody;
    expectTransferShape(active);
    expect(active).toMatchObject({ id: presigned.id, status: "active", downloads: 0 });
    const second = await confirm(t, apiKey, presigned.id);
    expect(second.statusCode, second.body).toBe(200);
    expect(second.json()).toEqual(active);

    const dl = await downloadOk(t, apiKey, presigned.id);
    expect(dl.auto_delete).toBe(false);
    for (const [index, expected] of [one, two].entries()) {
      const res = await fetchLink(t, dl.files[index]?.download_url as string);
      expect(res.statusCode).toBe(200);
      expect(Buffer.compare(res.rawPayload, expected)).toBe(0);
    }
    expect(
      (await fetchLink(t, dl.files[1]?.download_url as string, { range: "bytes=-10" })).rawPayload.equals(
        two.subarray(two.length - 10),
      ),
    ).toBe(true);
  });

  it("PUT larger than declared → 413 and the file is not stored; confirm then names it", async () => {
    const { apiKey } = await newParties(t);
    const presigned = await presignedOk(t, apiKey, [{ name: "declared-100.bin", size: 100 }]);
    const upload = presigned.upload_urls[0] as PresignedBody["upload_urls"][0];
    expectError(await putUpload(t, upload, bytes(101)), 413, "FILE_TOO_LARGE");
    expect(blobFiles(t, presigned.id)).toEqual([]);
    expect(tempFiles(t)).toEqual([]);
    const error = expectError(await confirm(t, apiKey, presigned.id), 400, "VALIDATION_ERROR");
    expect(error.message).toContain("declared-100.bin");
    // A body smaller than declared is stored but does not confirm either.
    expect((await putUpload(t, upload, bytes(99))).statusCode).toBe(200);
    expect(expectError(await confirm(t, apiKey, presigned.id), 400, "VALIDATION_ERROR").message).toContain(
      "declared-100.bin",
    );
    expect((await putUpload(t, upload, bytes(100))).statusCode).toBe(200);
    expect((await confirm(t, apiKey, presigned.id)).json().status).toBe("active");
  });

  it("confirm with a file missing → 400 VALIDATION_ERROR naming only the missing file; still pending", async () => {
    const { apiKey } = await newParties(t);
    const presigned = await presignedOk(t, apiKey, [
      { name: "uploaded.bin", size: 5 },
      { name: "forgotten.bin", size: 6 },
    ]);
    expect((await putUpload(t, presigned.upload_urls[0] as never, bytes(5))).statusCode).toBe(200);
    const error = expectError(await confirm(t, apiKey, presigned.id), 400, "VALIDATION_ERROR");
    expect(error.message).toContain("forgotten.bin");
    expect(error.message).not.toContain("uploaded.bin");
    expect(JSON.stringify(error.details)).toContain("forgotten.bin");
    expect((await getTransfer(t, apiKey, presigned.id)).json().status).toBe("pending");
  });

  it("an upload link of a confirmed transfer takes no more data; a forged one is refused", async () => {
    const { apiKey } = await newParties(t);
    const data = bytes(10);
    const { presigned } = await presignedActive(t, apiKey, [{ name: "x.bin", data }]);
    const upload = presigned.upload_urls[0] as PresignedBody["upload_urls"][0];
    const again = await putUpload(t, upload, bytes(10));
    expect(again.statusCode).toBe(410);
    const forged = { ...upload, upload_url: `${upload.upload_url.slice(0, -4)}AAAA` };
    expect((await putUpload(t, forged, bytes(10))).statusCode).toBe(403);
    const dl = await downloadOk(t, apiKey, presigned.id);
    expect((await fetchLink(t, dl.files[0]?.download_url as string)).rawPayload.equals(data)).toBe(true);
  });

  it("confirm after the transfer expired → 410 GONE", async () => {
    const { apiKey } = await newParties(t);
    const presigned = await presignedOk(t, apiKey, [{ name: "late.bin", size: 3 }], { expires_in: "1h" });
    expect((await putUpload(t, presigned.upload_urls[0] as never, bytes(3))).statusCode).toBe(200);
    await advanceClock(t, 3601);
    expectError(await confirm(t, apiKey, presigned.id), 410, "GONE");
    expect((await getTransfer(t, apiKey, presigned.id)).json().status).toBe("expired");
  });

  it("a body that is not JSON (multipart, text) → 415 UNSUPPORTED_MEDIA_TYPE", async () => {
    const { apiKey } = await newParties(t);
    const { payload, contentType } = await multipart(A2A, [small()]);
    const form = await t.app.inject({
      method: "POST",
      url: "/v1/transfers/presigned",
      payload,
      headers: { "content-type": contentType, authorization: `Bearer ${apiKey}` },
    });
    expectError(form, 415, "UNSUPPORTED_MEDIA_TYPE");
    const text = await t.call("POST", "/v1/transfers/presigned", {
      key: apiKey,
      body: "files=1",
      headers: { "content-type": "text/plain" },
    });
    expectError(text, 415, "UNSUPPORTED_MEDIA_TYPE");
    await expectNoTransfers(apiKey);
  });

  it("confirm of another account's transfer → 404; confirm of an unknown id → 404", async () => {
    const { apiKey } = await newParties(t);
    const other = await t.newAccount();
    const presigned = await presignedOk(t, apiKey, [{ name: "x.bin", size: 1 }]);
    expectError(await confirm(t, other.apiKey, presigned.id), 404, "NOT_FOUND");
    expectError(await confirm(t, apiKey, "tr_000000000000000000000000"), 404, "NOT_FOUND");
  });

  it("a file over the plan's max file size → 413, nothing created", async () => {
    const { apiKey } = await newParties(t);
    const res = await postPresigned(t, apiKey, {
      ...A2A,
      files: [
        { name: "ok.bin", size: 10 },
        { name: "huge.bin", size: FREE.maxFileSize + 1 },
      ],
    });
    expectError(res, 413, "FILE_TOO_LARGE");
    await expectNoTransfers(apiKey);
    // Exactly the maximum is fine.
    await presignedOk(t, apiKey, [{ name: "max.bin", size: FREE.maxFileSize }]);
  });

  it.each([
    ["no files", { files: [] }, "files"],
    ["negative size", { files: [{ name: "x", size: -1 }] }, "files"],
    ["file name over 255 bytes", { files: [{ name: "n".repeat(256), size: 1 }] }, "files"],
    ["file name climbing out", { files: [{ name: "../etc/passwd", size: 1 }] }, "files"],
    ["file name absolute", { files: [{ name: "/etc/passwd", size: 1 }] }, "files"],
    ["unknown sender", { sender: "carol" }, "sender"],
    ["unknown recipient", { recipient: "nobody" }, "recipient"],
    ["bad mode", { mode: "agent-to-robot" }, "mode"],
    ["expires_in beyond retention", { expires_in: "7d" }, "expires_in"],
    ["max_downloads 0", { max_downloads: 0 }, "max_downloads"],
    ["max_downloads 1001", { max_downloads: 1001 }, "max_downloads"],
    ["is_encrypted without encrypted_key", { is_encrypted: true }, "encrypted_key"],
    [
      "another encryption algorithm",
      { is_encrypted: true, encrypted_key: "a2V5", encryption_algorithm: "DES" },
      "encryption_algorithm",
    ],
  ])("%s → 400 VALIDATION_ERROR, nothing created", async (_name, override, path) => {
    const { apiKey } = await newParties(t);
    const res = await postPresigned(t, apiKey, { ...A2A, files: [{ name: "f.bin", size: 3 }], ...override });
    const error = expectError(res, 400, "VALIDATION_ERROR");
    expect(
      detailPaths(error).some((p) => p.startsWith(path)),
      `${detailPaths(error)} names ${path}`,
    ).toBe(true);
    await expectNoTransfers(apiKey);
  });

  it("401 without a key", async () => {
    expectError(
      await t.call("POST", "/v1/transfers/presigned", { body: { ...A2A, files: [{ name: "f", size: 1 }] } }),
      401,
      "UNAUTHORIZED",
    );
  });

  it("is_encrypted with encrypted_key and per-file encryption_iv: download returns them", async () => {
    const { apiKey, alice, bob } = await newParties(t);
    const one = bytes(48);
    const two = bytes(64);
    const presigned = await presignedOk(
      t,
      apiKey,
      [
        { name: "one.enc", size: one.length, encryption_iv: "aXYtMQ==" },
        { name: "two.enc", size: two.length, encryption_iv: "aXYtMg==" },
      ],
      {
        is_encrypted: true,
        encrypted_key: "d3JhcHBlZC1rZXk=",
        encryption_algorithm: "AES-256-GCM",
        sender_signature: "c2ln",
      },
    );
    expect((await putUpload(t, presigned.upload_urls[0] as never, one)).statusCode).toBe(200);
    expect((await putUpload(t, presigned.upload_urls[1] as never, two)).statusCode).toBe(200);
    expect((await confirm(t, apiKey, presigned.id)).json()).toMatchObject({
      is_encrypted: true,
      status: "active",
    });

    const dl: DownloadBody = await downloadOk(t, apiKey, presigned.id, "bob");
    expect(Object.keys(dl).sort()).toEqual(DOWNLOAD_KEYS);
    expect(dl).toMatchObject({
      is_encrypted: true,
      encrypted_key: "d3JhcHBlZC1rZXk=",
      encryption_algorithm: "AES-256-GCM",
      sender_signature: "c2ln",
      sender_public_key: alice.public_key,
      recipient_key_version: bob.key_version,
    });
    expect(dl.files.map((file) => [file.file_name, file.encryption_iv, file.size])).toEqual([
      ["one.enc", "aXYtMQ==", 48],
      ["two.enc", "aXYtMg==", 64],
    ]);
    const res = await fetchLink(t, dl.files[1]?.download_url as string);
    expect(res.rawPayload.equals(two)).toBe(true);
  });
});

describe("403 QUOTA_EXCEEDED: the free plan's 50 transfers a month", () => {
  it("the 51st transfer (multipart or presigned) → 403, nothing kept; the next billing period resets it", async () => {
    const { apiKey } = await newParties(t);
    // Presigned and multipart both count once each (decisions 3.14).
    for (let index = 0; index < 10; index++) await presignedOk(t, apiKey, [{ name: `p${index}`, size: 1 }]);
    for (let index = 10; index < FREE.transfersPerMonth; index++) {
      await sendTransfer(t, apiKey, [small(`m${index}.txt`, `${index}`)]);
    }
    expect((await listTransfers(t, apiKey)).total).toBe(FREE.transfersPerMonth);

    const check = snapshotBlobs();
    expectError(await postTransfer(t, apiKey, [small("51st.txt")]), 403, "QUOTA_EXCEEDED");
    check();
    expectError(
      await postPresigned(t, apiKey, { ...A2A, files: [{ name: "51st", size: 1 }] }),
      403,
      "QUOTA_EXCEEDED",
    );
    expect((await listTransfers(t, apiKey)).total).toBe(FREE.transfersPerMonth);

    // Past the account's billing day (day of month of creation; at most 31 days away) it starts again.
    await advanceClock(t, 32 * 86400);
    const fresh = await sendTransfer(t, apiKey, [small("new-month.txt")]);
    expect(fresh.status).toBe("active");
    await presignedOk(t, apiKey, [{ name: "new-month", size: 1 }]);
  });
});
