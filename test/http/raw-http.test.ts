import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestApp, type TestApp } from "../support/app.js";
import { firstResponse, listenLocally, type RawExchange, rawExchange } from "../support/raw-http.js";

let t: TestApp;
let port: number;
let apiKey: string;
beforeAll(async () => {
  t = await startTestApp();
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
