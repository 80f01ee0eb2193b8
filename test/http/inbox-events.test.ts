import { once } from "node:events";
import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OPEN_EVENT_STREAMS } from "../../src/rate-limits/policy.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { freshPostgres, postgresServer, postgresSkipReason, tempDir, titled } from "../support/databases.js";
import { EventStreamReader } from "../support/event-stream-reader.js";
import { freePort } from "../support/server-process.js";
import { expectError } from "./helpers.js";
import { newParties, type Parties, sendTransfer } from "./transfer-helpers.js";

const KEEP_ALIVE = ": keep-alive\n\n";
const KEEP_ALIVE_MS = 150;

interface Instance {
  t: TestApp;
  baseUrl: string;
}

/**
 * One in-process server on the shared database and data folder (its server key and blobs),
 * listening on a real port: a stream never ends, so app.inject cannot read one.
 */
async function instance(databaseUrl: string, dataDir: string): Promise<Instance> {
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const t = await startTestApp({
    env: { DATABASE_URL: databaseUrl, DATA_DIR: dataDir, PUBLIC_BASE_URL: baseUrl },
    app: { keepAliveMs: KEEP_ALIVE_MS },
  });
  await t.app.listen({ port, host: "127.0.0.1" });
  return { t, baseUrl };
}

/**
 * Decisions 8.4, on two server instances sharing one PostgreSQL database: `first` holds the
 * streams, `second` is where other clients create transfers.
 */
describe.skipIf(!postgresServer)(titled("the inbox event stream", postgresSkipReason), () => {
  let first: Instance;
  let second: Instance;
  let p: Parties;
  const dataDir = tempDir();
  let dropDatabase: () => Promise<void>;

  beforeAll(async () => {
    const database = await freshPostgres(postgresServer as string);
    dropDatabase = database.drop;
    first = await instance(database.url, dataDir.path);
    second = await instance(database.url, dataDir.path);
    p = await newParties(first.t);
  });
  afterAll(async () => {
    await first?.t.close();
    await second?.t.close();
    await dropDatabase?.();
    dataDir.remove();
  });

  const stream = (on: Instance, headers: Record<string, string> = {}, query = "") =>
    EventStreamReader.open(`${on.baseUrl}/v1/transfers/inbox/events${query}`, {
      authorization: `Bearer ${p.apiKey}`,
      "x-service-agent": "bob",
      ...headers,
    });
  /** The listing the stream must agree with: bob's whole inbox (the tests send fewer than 100). */
  const bobsInbox = async () => {
    const listing = await first.t.call("GET", "/v1/transfers/inbox?limit=100", {
      key: p.apiKey,
      headers: { "x-service-agent": "bob" },
    });
    return listing.json() as { transfers: { id: string }[]; next_cursor: string };
  };
  const named = (name: string) => [{ name, data: Buffer.from(name), type: "text/plain" }];
  const eventCount = (n: number) => (reader: EventStreamReader) => reader.events.length >= n;

  it("sends each transfer as `transfer.received`, its id the inbox position and its data the inbox item, byte for byte", async () => {
    const reader = await stream(first);
    try {
      expect(reader.response.status).toBe(200);
      expect(reader.response.headers.get("content-type")).toBe("text/event-stream; charset=utf-8");
      expect(reader.response.headers.get("cache-control")).toBe("no-store");
      // Counted once, as the inbox is, when it opens.
      expect(reader.response.headers.get("x-ratelimit-remaining")).toMatch(/^\d+$/);
      await reader.until((r) => r.text.startsWith(KEEP_ALIVE), "the opening keep-alive");

      const sent = await sendTransfer(first.t, p.apiKey, named("one.txt"));
      await reader.until(eventCount(1), "the first event");
      const page = await bobsInbox();
      expect(reader.frames[0]).toBe(
        `event: transfer.received\nid: ${page.next_cursor}\ndata: ${JSON.stringify(page.transfers[0])}\n\n`,
      );
      expect(reader.events[0]?.data.id).toBe(sent.id);
    } finally {
      await reader.close();
    }
  });

  it("sends transfers in order and, after a dropped stream, replays from Last-Event-ID exactly what came after", async () => {
    const start = (await bobsInbox()).next_cursor;
    const reader = await stream(first, {}, `?after=${start}`);
    const before: string[] = [];
    for (const name of ["a", "b", "c"]) before.push((await sendTransfer(first.t, p.apiKey, named(name))).id);
    await reader.until(eventCount(3), "three events");
    await reader.close();
    expect(reader.events.map((e) => e.data.id)).toEqual(before);
    expect(reader.events.map((e) => e.event)).toEqual(Array(3).fill("transfer.received"));
    const ids = reader.events.map((e) => e.id);
    expect(new Set(ids).size).toBe(3);

    const whileAway: string[] = [];
    for (const name of ["d", "e"]) whileAway.push((await sendTransfer(second.t, p.apiKey, named(name))).id);
    // Last-Event-ID wins over the `after` of the URL, as an EventSource reconnecting sends both.
    const resumed = await stream(first, { "last-event-id": ids[2] as string }, `?after=${start}`);
    try {
      await resumed.until(eventCount(2), "the two missed events");
      const late = (await sendTransfer(second.t, p.apiKey, named("f"))).id;
      await resumed.until(eventCount(3), "the next live event");
      expect(resumed.events.map((e) => e.data.id)).toEqual([...whileAway, late]);
    } finally {
      await resumed.close();
    }

    const byQuery = await stream(first, {}, `?after=${ids[2]}`);
    try {
      await byQuery.until(eventCount(3), "the replay by `after`");
      expect(byQuery.events.slice(0, 2).map((e) => e.data.id)).toEqual(whileAway);
    } finally {
      await byQuery.close();
    }
  });

  it("without a position starts with what the inbox holds, like the listing", async () => {
    const held = (await bobsInbox()).transfers.map((x) => x.id);
    const reader = await stream(first);
    try {
      await reader.until(eventCount(held.length), "the inbox's transfers");
      expect(reader.events.map((e) => e.data.id)).toEqual(held);
      // Only bob's: a stream for alice holds none of them.
      const alices = await stream(first, { "x-service-agent": "alice" });
      await alices.until((r) => r.text.startsWith(KEEP_ALIVE), "alice's stream");
      await alices.close();
      expect(alices.events).toEqual([]);
    } finally {
      await reader.close();
    }
  });

  it("hears a transfer created through another instance", async () => {
    const reader = await stream(first, {}, "");
    try {
      await reader.until((r) => r.text.startsWith(KEEP_ALIVE), "the stream open");
      await new Promise((resolve) => setTimeout(resolve, 100));
      const already = reader.events.length;
      const started = Date.now();
      const sent = await sendTransfer(second.t, p.apiKey, named("elsewhere.txt"));
      await reader.until(eventCount(already + 1), "the event from the other instance");
      expect(reader.events.at(-1)?.data.id).toBe(sent.id);
      expect(Date.now() - started).toBeLessThan(5000);
    } finally {
      await reader.close();
    }
  });

  it("sends a keep-alive comment at every interval while nothing happens", async () => {
    const reader = await stream(first, { "x-service-agent": "alice" });
    try {
      await reader.until((r) => r.text === KEEP_ALIVE.repeat(4), "four keep-alives", 3000);
    } finally {
      await reader.close();
    }
  });

  it("leaves no listener behind when clients drop their streams", async () => {
    const engine = first.t.service.engine;
    await new Promise((resolve) => setTimeout(resolve, 50));
    const idle = engine.waiting;
    const readers = await Promise.all([1, 2, 3].map(() => stream(first)));
    for (const reader of readers) await reader.until((r) => r.text.startsWith(KEEP_ALIVE), "open");
    expect(engine.waiting).toBe(idle + 3);
    for (const reader of readers) await reader.close();
    const deadline = Date.now() + 5000;
    while (engine.waiting > idle && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    expect(engine.waiting).toBe(idle);
    // A transfer after they went wakes no one and writes to no closed socket.
    await sendTransfer(first.t, p.apiKey, named("nobody.txt"));
    expect(engine.waiting).toBe(idle);

    // Clients gone before the stream started (the request sent, the connection dropped at once).
    const { port } = new URL(first.baseUrl);
    for (let i = 0; i < 5; i++) {
      const socket = connect(Number(port), "127.0.0.1");
      await once(socket, "connect");
      socket.end(
        `GET /v1/transfers/inbox/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${p.apiKey}\r\nX-Service-Agent: bob\r\n\r\n`,
      );
      socket.destroy();
    }
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(engine.waiting).toBe(idle);
  });

  it(`holds at most ${OPEN_EVENT_STREAMS.limit} open streams per API key: the next is 429 RATE_LIMITED with Retry-After, and closing one admits another`, async () => {
    const q = await newParties(first.t);
    const open = (key: string) =>
      EventStreamReader.open(`${first.baseUrl}/v1/transfers/inbox/events`, {
        authorization: `Bearer ${key}`,
        "x-service-agent": "bob",
      });
    const readers = await Promise.all(Array.from({ length: OPEN_EVENT_STREAMS.limit }, () => open(q.apiKey)));
    try {
      for (const reader of readers) await reader.until((r) => r.text.startsWith(KEEP_ALIVE), "open");
      const refused = await open(q.apiKey);
      expect(refused.response.status).toBe(429);
      expect(refused.response.headers.get("retry-after")).toBe(String(OPEN_EVENT_STREAMS.retryAfterSeconds));
      await refused.done;
      expect(JSON.parse(refused.text).error).toMatchObject({ code: "RATE_LIMITED" });
      // Another key is not held back by this one's streams.
      const other = await stream(first);
      expect(other.response.status).toBe(200);
      await other.close();

      await readers.pop()?.close();
      let admitted: EventStreamReader | undefined;
      // The server notices the dropped connection a moment after the client drops it.
      const deadline = Date.now() + 5000;
      while (!admitted && Date.now() < deadline) {
        const next = await open(q.apiKey);
        if (next.response.status === 200) admitted = next;
        else await new Promise((resolve) => setTimeout(resolve, 20));
      }
      expect(admitted?.response.status, "a stream after one of the key's closed").toBe(200);
      if (admitted) readers.push(admitted);
    } finally {
      for (const reader of readers) await reader.close();
    }
  });

  it("refuses as the inbox does: no credential, an unknown agent, a position it never gave, no event stream accepted", async () => {
    const call = (headers: Record<string, string>, query = "") =>
      first.t.call("GET", `/v1/transfers/inbox/events${query}`, { headers });
    const auth = { authorization: `Bearer ${p.apiKey}` };
    expectError(await call({}), 401, "UNAUTHORIZED");
    expectError(await call(auth, "?agent_id=nobody"), 400, "VALIDATION_ERROR");
    expectError(await call({ ...auth, "last-event-id": "not-ours" }), 400, "VALIDATION_ERROR");
    expectError(await call({ ...auth, "last-event-id": "MTI".repeat(100) }), 400, "VALIDATION_ERROR");
    expectError(await call(auth, "?after=%25%25"), 400, "VALIDATION_ERROR");
    expectError(await call({ ...auth, accept: "application/json" }), 406, "NOT_ACCEPTABLE");
  });

  it("ends its streams when the server closes, so a shutdown is not held", async () => {
    const reader = await stream(second);
    await reader.until((r) => r.text.startsWith(KEEP_ALIVE), "open");
    const closing = Date.now();
    await second.t.app.close();
    await reader.done;
    expect(Date.now() - closing).toBeLessThan(3000);
  });
});
