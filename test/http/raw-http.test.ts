import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TimeLimits } from "../../src/http/limits.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { firstResponse, listenLocally, type RawExchange, rawExchange } from "../support/raw-http.js";
import { newParties, presignedOk } from "./transfer-helpers.js";

/** Short limits, so slow clients are caught in a test's time; the rules are the production ones. */
const LIMITS: TimeLimits = {
  headersTimeoutMs: 1000,
  bodyWindowMs: 500,
  bodyMinBytes: 64,
  keepAliveTimeoutMs: 5000,
};

let t: TestApp;
let port: number;
let apiKey: string;
beforeAll(async () => {
  t = await startTestApp({ app: { timeLimits: LIMITS } });
  port = await listenLocally(t.app);
  apiKey = (await t.newAccount()).apiKey;
});
afterAll(async () => t.close());

/** The exchange's first answer has `status` and the one error body of decisions 3.1. */
function expectErrorAnswer(exchange: RawExchange, status: number) {
  const response = firstResponse(exchange.received);
  expect(
    response,
    `an HTTP answer, got ${JSON.stringify(exchange.received.toString("latin1"))}`,
  ).not.toBeNull();
  if (!response) return;
  expect(response.status, response.body).toBe(status);
  expect(response.headers["content-type"]).toMatch(/^application\/json/);
  const body = JSON.parse(response.body);
  expect(Object.keys(body)).toEqual(["error"]);
  expect(body.error.status).toBe(status);
  expect(typeof body.error.code).toBe("string");
  expect(typeof body.error.message).toBe("string");
}

const head = (lines: string[]) => `${lines.join("\r\n")}\r\n\r\n`;
const json = (length: number) => [
  "POST /v1/agents/register HTTP/1.1",
  "Host: localhost",
  `Authorization: Bearer ${apiKey}`,
  "Content-Type: application/json",
  `Content-Length: ${length}`,
];

describe("Node's own refusals answer in the one error body (finding 3)", () => {
  it.each([
    ["a malformed request line", "GARBAGE\r\n\r\n"],
    ["a header line without a colon", head(["GET /healthz HTTP/1.1", "Host: x", "Broken header"])],
    [
      "two different Content-Length headers",
      `${head([...json(5).slice(0, 4), "Content-Length: 5", "Content-Length: 6"])}hello`,
    ],
    [
      "Content-Length and Transfer-Encoding together",
      `${head([...json(5), "Transfer-Encoding: chunked"])}0\r\n\r\n`,
    ],
    [
      "a bad chunk size",
      `${head([...json(0).slice(0, 4), "Transfer-Encoding: chunked"])}zz\r\nhello\r\n0\r\n\r\n`,
    ],
  ])("%s → 400", async (_what, request) => {
    const exchange = await rawExchange(port, { steps: [request] });
    expectErrorAnswer(exchange, 400);
    expect(exchange.closedByServer).toBe(true);
  });

  it("an HTTP/1.1 request without Host → 400", async () => {
    expectErrorAnswer(await rawExchange(port, { steps: ["GET /healthz HTTP/1.1\r\n\r\n"] }), 400);
  });

  it("an Expect other than 100-continue → 417", async () => {
    const request = head(["GET /healthz HTTP/1.1", "Host: x", "Expect: something-else"]);
    const exchange = await rawExchange(port, { steps: [request] });
    expectErrorAnswer(exchange, 417);
    expect(JSON.parse(firstResponse(exchange.received)?.body ?? "{}").error.code).toBe("EXPECTATION_FAILED");
  });

  it("headers over the limit → 431", async () => {
    const request = head(["GET /healthz HTTP/1.1", "Host: x", `X-Big: ${"a".repeat(20_000)}`]);
    expectErrorAnswer(await rawExchange(port, { steps: [request] }), 431);
  });

  it("a body cut short (the client closes its side) → 400, or the connection simply ends", async () => {
    const exchange = await rawExchange(port, { steps: [head(json(100)), '{"agent_id":'], end: true });
    expect(exchange.closedByServer).toBe(true);
    if (exchange.received.length > 0) expectErrorAnswer(exchange, 400);
  });
});

describe("slow clients are cut off (finding 6)", () => {
  it("a body trickling one byte at a time → 408 and the connection closes", async () => {
    const trickle = Array.from({ length: 40 }, (_, i) => [i === 0 ? "{" : " ", 100]).flat();
    const exchange = await rawExchange(port, { steps: [head(json(1000)), ...trickle], waitMs: 3000 });
    expectErrorAnswer(exchange, 408);
    expect(exchange.closedByServer).toBe(true);
    expect(exchange.elapsedMs).toBeLessThan(3000);
  });

  it("a request idle after its headers → 408 and the connection closes", async () => {
    const exchange = await rawExchange(port, { steps: [head(json(10))], waitMs: 3000 });
    expectErrorAnswer(exchange, 408);
    expect(exchange.closedByServer).toBe(true);
  });

  it("headers that never finish → 408 and the connection closes", async () => {
    const steps = [
      "POST /v1/agents/register HTTP/1.1\r\nHost: x\r\n",
      ...Array.from({ length: 20 }, () => ["X", 200]).flat(),
    ];
    const exchange = await rawExchange(port, { steps, waitMs: 3000 });
    expectErrorAnswer(exchange, 408);
    expect(exchange.closedByServer).toBe(true);
  });

  it("an upload that keeps moving is never cut off, however long it takes", async () => {
    const parties = await newParties(t);
    const size = 30 * 1024;
    const presigned = await presignedOk(t, parties.apiKey, [{ name: "slow.bin", size }]);
    const upload = presigned.upload_urls[0];
    if (!upload) throw new Error("no upload link");
    const path = new URL(upload.upload_url).pathname;
    const chunk = Buffer.alloc(1024, 7);
    // 30 windows' worth: 1 KiB every 100 ms is well over the 64 bytes per 500 ms asked.
    const body = Array.from({ length: size / chunk.length }, () => [chunk, 100]).flat();
    const request = head([
      `PUT ${path} HTTP/1.1`,
      "Host: x",
      "Content-Type: application/octet-stream",
      `Content-Length: ${size}`,
    ]);
    const exchange = await rawExchange(port, { steps: [request, ...body], waitMs: 3000 });
    const response = firstResponse(exchange.received);
    expect(response?.status, response?.body).toBe(200);
    expect(JSON.parse(response?.body ?? "{}")).toMatchObject({ size });
  });
});
