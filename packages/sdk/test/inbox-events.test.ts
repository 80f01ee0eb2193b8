import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { HandoffClient, type InboxArrival, type Transfer } from "@handoff/sdk";
import { describe, expect, it } from "vitest";
import { type AliceAndBob, aliceAndBob } from "./support.js";

const EVENTS_PATH = "/v1/transfers/inbox/events";

/** A fetch that records each URL it is asked for and lets `refuse` answer some instead of the server. */
function recordingFetch(refuse: (url: URL) => Response | Error | null = () => null) {
  const urls: URL[] = [];
  const fetcher: typeof fetch = async (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    urls.push(url);
    const refusal = refuse(url);
    if (refusal instanceof Error) throw refusal;
    return refusal ?? fetch(input, init);
  };
  return { urls, fetch: fetcher, streams: () => urls.filter((url) => url.pathname === EVENTS_PATH) };
}

/** Bob's client with its own fetch (the identity and key of the block's bob). */
const bobWith = (w: AliceAndBob, fetcher: typeof fetch) =>
  new HandoffClient({
    baseUrl: w.server.baseUrl,
    apiKey: w.apiKey,
    identity: w.bob.identity,
    fetch: fetcher,
  });

/** Collects arrivals from `client.inboxEvents` in the background until stopped. */
function collect(client: HandoffClient, after?: string, silenceMs?: number) {
  const arrivals: InboxArrival[] = [];
  const errors: Error[] = [];
  const controller = new AbortController();
  const running = (async () => {
    const events = client.inboxEvents({
      signal: controller.signal,
      ...(after ? { after } : {}),
      ...(silenceMs ? { silenceMs } : {}),
      onError: (error) => errors.push(error),
    });
    for await (const arrival of events) arrivals.push(arrival);
  })();
  return {
    arrivals,
    errors,
    ids: () => arrivals.map((a) => a.transfer.id),
    async stop() {
      controller.abort();
      await running;
    },
  };
}

async function until(check: () => boolean, what: string, ms = 15_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe("inbox events", () => {
  const w = aliceAndBob({ database: "postgres" });
  const sendOne = async (name: string): Promise<Transfer> => {
    const path = join(w.dir, name);
    writeFileSync(path, name);
    return w.alice.client.send({ to: "bob", paths: [path] });
  };

  it("come from the event stream and, after a dropped connection, resume after the last event's id", async () => {
    const recorder = recordingFetch();
    const bob = bobWith(w, recorder.fetch);
    const start = (await bob.inbox()).next_cursor ?? undefined;
    const seen = collect(bob, start);
    try {
      await until(() => recorder.streams().length === 1, "the stream to open");
      const one = await sendOne("one.txt");
      await until(() => seen.ids().includes(one.id), "the first transfer");
      expect(seen.arrivals[0]?.position).toBeTruthy();

      // Every connection to the server drops, the stream's with them.
      w.server.t.app.server.closeAllConnections();
      const two = await sendOne("two.txt");
      await until(() => seen.ids().includes(two.id), "the transfer sent across the drop");
      const three = await sendOne("three.txt");
      await until(() => seen.ids().includes(three.id), "the next transfer");

      expect(seen.ids()).toEqual([one.id, two.id, three.id]);
      const streams = recorder.streams();
      expect(streams.length).toBeGreaterThanOrEqual(2);
      expect(streams[0]?.searchParams.get("after")).toBe(start ?? null);
      expect(streams[1]?.searchParams.get("after")).toBe(seen.arrivals[0]?.position);
      // No long-poll was needed: the stream carried all three.
      expect(recorder.urls.some((url) => url.pathname === "/v1/transfers/inbox")).toBe(true);
      expect(
        recorder.urls.filter((url) => url.pathname === "/v1/transfers/inbox" && url.searchParams.has("wait")),
      ).toEqual([]);
    } finally {
      await seen.stop();
    }
  });

  it("fall back to the long-poll for good when the server has no stream (404)", async () => {
    const recorder = recordingFetch((url) =>
      url.pathname === EVENTS_PATH
        ? Response.json(
            { error: { code: "NOT_FOUND", message: "route not found", status: 404 } },
            { status: 404 },
          )
        : null,
    );
    const bob = bobWith(w, recorder.fetch);
    const start = (await bob.inbox()).next_cursor ?? undefined;
    const seen = collect(bob, start);
    try {
      const one = await sendOne("polled-one.txt");
      const two = await sendOne("polled-two.txt");
      await until(() => seen.ids().includes(two.id), "both transfers");
      expect(seen.ids()).toEqual([one.id, two.id]);
      expect(recorder.streams()).toHaveLength(1);
      expect(seen.errors).toEqual([]);
    } finally {
      await seen.stop();
    }
  });

  it("give up a stream that falls silent (no keep-alive) and long-poll", async () => {
    // A stream that opens and then says nothing, as behind a proxy that holds the bytes back.
    const silent = () =>
      new Response(new ReadableStream({ start() {} }), { headers: { "content-type": "text/event-stream" } });
    const recorder = recordingFetch((url) => (url.pathname === EVENTS_PATH ? silent() : null));
    const bob = bobWith(w, recorder.fetch);
    const start = (await bob.inbox()).next_cursor ?? undefined;
    const seen = collect(bob, start, 300);
    try {
      await until(() => recorder.urls.some((url) => url.searchParams.has("wait")), "the long-poll");
      expect(seen.errors[0]?.message).toContain("silent for 300 ms");
      const one = await sendOne("after-silence.txt");
      await until(() => seen.ids().includes(one.id), "the transfer through the long-poll");
    } finally {
      await seen.stop();
    }
  });

  it("long-poll while the stream fails, and try the stream again", async () => {
    let failing = true;
    const recorder = recordingFetch((url) =>
      url.pathname === EVENTS_PATH && failing ? new TypeError("fetch failed") : null,
    );
    const bob = bobWith(w, recorder.fetch);
    const start = (await bob.inbox()).next_cursor ?? undefined;
    const seen = collect(bob, start);
    try {
      await until(() => recorder.urls.some((url) => url.searchParams.has("wait")), "the long-poll");
      const one = await sendOne("while-failing.txt");
      await until(() => seen.ids().includes(one.id), "the transfer through the long-poll");
      expect(seen.errors.length).toBeGreaterThan(0);
      failing = false;
      const tried = recorder.streams().length;
      const two = await sendOne("after-recovery.txt");
      await until(() => seen.ids().includes(two.id), "the next transfer");
      await until(() => recorder.streams().length > tried, "the stream tried again");
      expect(seen.ids()).toEqual([one.id, two.id]);
    } finally {
      await seen.stop();
    }
  });
});
