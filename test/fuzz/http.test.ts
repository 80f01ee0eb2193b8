import fc from "fast-check";
import type { LightMyRequestResponse } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newParties } from "../http/transfer-helpers.js";
import { ADMIN_TOKEN, startTestApp, type TestApp } from "../support/app.js";
import { unopenedStream } from "../support/event-stream-reader.js";
import { firstResponse, listenLocally, rawExchange } from "../support/raw-http.js";

/** Seeded so a failure replays: FUZZ_SEED=<seed> npx vitest run test/fuzz. */
const SEED = Number(process.env.FUZZ_SEED ?? 1124);
const RUNS = Number(process.env.FUZZ_RUNS ?? 1500);
const RAW_RUNS = Number(process.env.FUZZ_RAW_RUNS ?? 150);

type DocumentedGet = Parameters<typeof unopenedStream>[0];

let t: TestApp;
let routes: { method: string; path: string }[];
/** What each documented GET answers (its event streams are not opened: unopenedStream). */
let gets: Record<string, DocumentedGet | undefined>;
let keys: string[];
beforeAll(async () => {
  t = await startTestApp();
  const parties = await newParties(t);
  keys = [parties.apiKey, parties.apiKey, parties.apiKey, ADMIN_TOKEN, "hnd_notakey", ""];
  // Every route the app documents, so that a new route is fuzzed without touching this file.
  const document = (await t.call("GET", "/docs/json")).json() as {
    paths: Record<string, Record<string, DocumentedGet>>;
  };
  routes = Object.entries(document.paths).flatMap(([path, operations]) =>
    Object.keys(operations).map((method) => ({ method: method.toUpperCase(), path })),
  );
  gets = Object.fromEntries(
    Object.entries(document.paths).map(([path, operations]) => [path, operations.get]),
  );
});
afterAll(async () => t.close());

/** What the one error body of decisions 3.1 requires of an answer; null when it holds. */
function shapeProblem(status: number, contentType: string | undefined, text: string): string | null {
  if (status >= 500) return `status ${status}`;
  if (status < 400) return null;
  if (!/^application\/json/.test(contentType ?? "")) return `content-type ${contentType}`;
  let body: { error?: { code?: unknown; message?: unknown; status?: unknown; details?: unknown } };
  try {
    body = JSON.parse(text);
  } catch {
    return `not JSON: ${text.slice(0, 80)}`;
  }
  const error = body.error;
  if (!error || Object.keys(body).length !== 1) return "no error object";
  if (typeof error.code !== "string" || typeof error.message !== "string") return "no code or message";
  if (error.status !== status) return `error.status ${error.status} for HTTP ${status}`;
  if (error.code === "VALIDATION_ERROR" && !(Array.isArray(error.details) && error.details.length > 0)) {
    return "VALIDATION_ERROR without details";
  }
  return null;
}

const segment = fc.oneof(
  fc.constantFrom(
    "%ZZ",
    "%",
    "%E0%A4%A",
    "%ED%A0%80",
    "%00",
    "..",
    ".",
    "tr_000000000000000000000000",
    "alice",
  ),
  fc.string({ maxLength: 12 }).map(encodeURIComponent),
  fc.integer({ min: 200, max: 5000 }).map((length) => "a".repeat(length)),
  fc.uuid(),
);

/** A path of the app with its parameters filled in at random, or a path it does not have. */
const pathOf = (template: string) =>
  fc.array(segment, { minLength: 4, maxLength: 4 }).map((values) => {
    let index = 0;
    return template.replace(/\{[^}]+\}/g, () => values[index++ % values.length] as string);
  });

const deepJson = fc
  .tuple(fc.integer({ min: 60, max: 100_000 }), fc.boolean())
  .map(([depth, array]) =>
    array ? `${"[".repeat(depth)}${"]".repeat(depth)}` : `${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`,
  );

const multipartFragment = fc
  .tuple(
    fc.constantFrom("sender", "recipient", "files", "metadata", "mode"),
    fc.string({ maxLength: 40 }),
    fc.boolean(),
  )
  .map(([name, value, closed]) => {
    const head = `--b\r\nContent-Disposition: form-data; name="${name}"${name === "files" ? '; filename="x"' : ""}\r\n\r\n`;
    return Buffer.from(`${head}${value}\r\n${closed ? "--b--\r\n" : ""}`);
  });

/** A body and its content type: JSON of every kind, deep, huge, surrogates, bad UTF-8, form fragments. */
const body = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.jsonValue().map((value) => ({ type: "application/json", payload: JSON.stringify(value) })),
  },
  {
    weight: 3,
    arbitrary: fc
      .dictionary(
        fc.constantFrom(
          "agent_id",
          "name",
          "email",
          "plan",
          "files",
          "metadata",
          "mode",
          "sender",
          "recipient",
          "public_key",
          "advance_seconds",
          "max_downloads",
        ),
        fc.jsonValue(),
        { maxKeys: 6 },
      )
      .map((value) => ({ type: "application/json", payload: JSON.stringify(value) })),
  },
  { weight: 1, arbitrary: deepJson.map((payload) => ({ type: "application/json", payload })) },
  {
    weight: 1,
    arbitrary: fc
      .constantFrom('{"name":"\\ud800"}', '{"\\udc00":1}', '{"agent_id":"a\\u0000"}')
      .map((payload) => ({ type: "application/json", payload })),
  },
  {
    weight: 1,
    arbitrary: fc
      .uint8Array({ maxLength: 64 })
      .map((bytes) => ({ type: "application/json", payload: Buffer.from(bytes) })),
  },
  {
    weight: 1,
    arbitrary: fc.constant({ type: "application/json", payload: `{"a":"${"x".repeat(1024 * 1024 + 10)}"}` }),
  },
  {
    weight: 1,
    arbitrary: multipartFragment.map((payload) => ({ type: "multipart/form-data; boundary=b", payload })),
  },
  {
    weight: 1,
    arbitrary: fc
      .constantFrom(
        "text/plain",
        "application/xml",
        "multipart/form-data",
        "application/json; charset=latin1",
      )
      .map((type) => ({ type, payload: "x=1" })),
  },
  { weight: 1, arbitrary: fc.constant(null) },
);

const headerValue = fc.stringMatching(/^[\x20-\x7e]{0,40}$/);

const request = fc.record({
  route: fc.nat(),
  method: fc.option(fc.constantFrom("GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD"), { freq: 5 }),
  path: fc.nat(),
  query: fc.array(
    fc.tuple(
      fc.constantFrom("limit", "offset", "status", "direction", "after", "agent", "q", "account"),
      fc.string({ maxLength: 8 }),
    ),
    { maxLength: 3 },
  ),
  key: fc.nat(),
  body,
  headers: fc.dictionary(
    fc.constantFrom("idempotency-key", "x-service-agent", "range", "accept", "x-forwarded-for"),
    headerValue,
    { maxKeys: 3 },
  ),
});

describe("fuzz: every route, random requests", () => {
  it(`every answer is below 500 and every error has the one error body (seed ${SEED}, ${RUNS} runs)`, async () => {
    const failures: string[] = [];
    const statuses = new Map<number, number>();
    await fc.assert(
      fc.asyncProperty(request, async (r) => {
        const route = routes[r.route % routes.length] as { method: string; path: string };
        const path = fc.sample(pathOf(route.path), { numRuns: 1, seed: r.path })[0] as string;
        const query = r.query.map(([name, value]) => `${name}=${encodeURIComponent(value)}`).join("&");
        const key = keys[r.key % keys.length];
        const res: LightMyRequestResponse = await t.app.inject({
          method: (r.method ?? route.method) as "GET",
          url: query ? `${path}?${query}` : path,
          headers: {
            ...r.headers,
            ...(key ? { authorization: `Bearer ${key}` } : {}),
            ...(r.body ? { "content-type": r.body.type } : {}),
            ...((r.method ?? route.method) === "GET" ? unopenedStream(gets[route.path]) : {}),
          },
          ...(r.body ? { payload: r.body.payload } : {}),
        });
        const problem =
          // A HEAD answer has no body to hold the error: a random HEAD, or a route that is one (tus).
          (r.method ?? route.method) === "HEAD" && res.statusCode < 500
            ? null
            : shapeProblem(res.statusCode, res.headers["content-type"] as string | undefined, res.body);
        if (problem) failures.push(`${r.method ?? route.method} ${path.slice(0, 120)}: ${problem}`);
        statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1);
        return true;
      }),
      { seed: SEED, numRuns: RUNS, endOnFailure: true },
    );
    // The fuzz reaches the handlers, not only the refusals in front of them.
    expect([...statuses.keys()].filter((status) => status < 300).length).toBeGreaterThan(0);
    expect(statuses.size).toBeGreaterThan(5);
    expect(failures).toEqual([]);
    expect((await t.call("GET", "/healthz")).statusCode).toBe(200);
  }, 240_000);
});

/** Valid requests to start mutating from. */
const SEEDS = [
  "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n",
  'POST /v1/agents/register HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 16\r\n\r\n{"agent_id":"a"}',
  "PUT /v1/uploads/abc.def HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
  "GET /v1/transfers?limit=1 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer hnd_x\r\n\r\n",
];

const mutation = fc.record({
  seed: fc.nat(),
  edits: fc.array(
    fc.record({
      at: fc.nat(),
      kind: fc.constantFrom("flip", "insert", "delete", "dup"),
      byte: fc.integer({ min: 0, max: 255 }),
    }),
    { minLength: 1, maxLength: 6 },
  ),
});

function mutate(text: string, edits: { at: number; kind: string; byte: number }[]): Buffer {
  let bytes = Buffer.from(text, "latin1");
  for (const { at, kind, byte } of edits) {
    const i = at % Math.max(1, bytes.length);
    if (kind === "flip") bytes[i] = byte;
    else if (kind === "insert")
      bytes = Buffer.concat([bytes.subarray(0, i), Buffer.from([byte]), bytes.subarray(i)]);
    else if (kind === "delete") bytes = Buffer.concat([bytes.subarray(0, i), bytes.subarray(i + 1)]);
    else bytes = Buffer.concat([bytes.subarray(0, i), bytes.subarray(i, i + 20), bytes.subarray(i)]);
  }
  return bytes;
}

describe("fuzz: malformed HTTP on a listening server", () => {
  it(`every answer is HTTP with the one error body when it is an error (seed ${SEED}, ${RAW_RUNS} runs)`, async () => {
    const port = await listenLocally(t.app);
    const failures: string[] = [];
    await fc.assert(
      fc.asyncProperty(mutation, async ({ seed, edits }) => {
        const bytes = mutate(SEEDS[seed % SEEDS.length] as string, edits);
        const exchange = await rawExchange(port, { steps: [bytes], end: true, waitMs: 1000 });
        if (exchange.received.length === 0) return true;
        const response = firstResponse(exchange.received);
        const problem = response
          ? shapeProblem(response.status, response.headers["content-type"], response.body)
          : `not HTTP: ${exchange.received.toString("latin1").slice(0, 60)}`;
        if (problem) failures.push(`${JSON.stringify(bytes.toString("latin1"))}: ${problem}`);
        return true;
      }),
      { seed: SEED, numRuns: RAW_RUNS, endOnFailure: true },
    );
    expect(failures).toEqual([]);
    const health = await fetch(`http://127.0.0.1:${port}/healthz`);
    expect(health.status).toBe(200);
  }, 120_000);
});
