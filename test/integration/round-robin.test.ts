import { createHash, randomBytes } from "node:crypto";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { ADMIN_TOKEN, randomPublicKey } from "../support/app.js";
import { freshPostgres, postgresServer, postgresSkipReason, tempDir, titled } from "../support/databases.js";
import { EventStreamReader } from "../support/event-stream-reader.js";
import { RoundRobinProxy } from "../support/round-robin-proxy.js";
import { callJson as call, ServerProcess } from "../support/server-process.js";
import { openPatch, type TusTrip, tusOffset, tusUpload } from "../support/tus-client.js";
import { startReceiver } from "../support/webhook-receiver.js";

const MiB = 1024 * 1024;
const TUS = { "tus-resumable": "1.0.0" };
const CHUNK = 8 * MiB;
const redisUrl = process.env.TEST_REDIS_URL || null;
if (!redisUrl)
  console.warn("[handoff tests] round-robin: the shared event-stream cap is not checked: set TEST_REDIS_URL");

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const sha256 = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");

/**
 * Issue 34: three instances of the real server on one PostgreSQL database and one blob folder,
 * behind a round-robin balancer of the test's own with no sticky sessions.
 */
describe.skipIf(!postgresServer)(
  titled("three instances behind a round-robin balancer", postgresSkipReason),
  () => {
    const cleanups: (() => Promise<void> | void)[] = [];
    afterAll(async () => {
      for (const cleanup of cleanups.reverse()) await cleanup();
    });

    it("uploads (one instance killed mid-PATCH), downloads, event streams, webhooks and housekeeping all work, each once", async () => {
      const database = await freshPostgres(postgresServer as string);
      const dir = tempDir();
      const receiver = await startReceiver();
      const proxy = await RoundRobinProxy.start();
      cleanups.push(
        () => database.drop(),
        () => dir.remove(),
        () => receiver.close(),
        () => proxy.close(),
      );
      const env = {
        DATABASE_URL: database.url,
        DATA_DIR: dir.path,
        ADMIN_TOKEN,
        PUBLIC_BASE_URL: proxy.url,
        WEBHOOKS_ALLOW_PRIVATE: "1",
        // Moved forward on every instance at once at the end, so their housekeepers race for the purge.
        TEST_CLOCK: "1",
        ...(redisUrl ? { REDIS_URL: redisUrl } : {}),
      };
      // The first one migrates the database; the others start beside each other on it.
      const first = await ServerProcess.start(env, { readyTimeoutMs: 120_000 });
      const instances = [first, ...(await Promise.all([1, 2].map(() => ServerProcess.start(env))))];
      for (const instance of instances) {
        cleanups.push(() => instance.kill());
        proxy.add(instance.baseUrl);
      }
      const base = proxy.url;
      const client = new pg.Client({ connectionString: database.url });
      await client.connect();
      cleanups.push(() => client.end());
      const leaseHolders = async () =>
        Number((await client.query("select count(*) as n from upload_leases")).rows[0].n);

      const created = await call(base, "POST", "/v1/admin/accounts", ADMIN_TOKEN, {
        email: `round-robin-${randomBytes(4).toString("hex")}@example.com`,
        plan: "builder",
      });
      const key = created.api_key.api_key as string;
      await call(base, "POST", "/v1/agents/register", key, {
        agent_id: "alice",
        public_key: randomPublicKey(),
      });
      const bob = await call(base, "POST", "/v1/agents/register", key, {
        agent_id: "bob",
        public_key: randomPublicKey(),
        webhook_url: receiver.url,
      });

      // Event streams: the cap of 10 per key holds across the instances when Redis shares it.
      const streamUrl = `${base}/v1/transfers/inbox/events?agent_id=bob`;
      const auth = { authorization: `Bearer ${key}` };
      const streams: EventStreamReader[] = [];
      for (let i = 0; i < 10; i++) {
        const stream = await EventStreamReader.open(streamUrl, auth);
        expect(stream.response.status).toBe(200);
        streams.push(stream);
      }
      cleanups.push(async () => {
        for (const stream of streams) await stream.close();
      });
      if (redisUrl) {
        const refused = await fetch(streamUrl, { headers: { ...auth, accept: "text/event-stream" } });
        expect(refused.status).toBe(429);
        expect(refused.headers.get("retry-after")).toBe("15");
        await refused.body?.cancel();
      }

      const data = randomBytes(5 * CHUNK);
      const presigned = await call(base, "POST", "/v1/transfers/presigned", key, {
        mode: "agent-to-agent",
        sender: "alice",
        recipient: "bob",
        files: [{ name: "big.bin", size: data.length }],
        max_downloads: 1,
        auto_delete: true,
      });
      const resumable = `${base}${new URL(presigned.upload_urls[0].resumable_url).pathname}`;
      const patchesBefore = () => proxy.served.filter((s) => s.method === "PATCH").length;

      // Two chunks, each PATCH to the next instance in turn.
      const seen: TusTrip = { locked: [] };
      const slice = (start: number, end: number) => data.subarray(start, end);
      await tusUpload(resumable, 2 * CHUNK, slice, { chunk: CHUNK, trip: seen });
      expect(await tusOffset(resumable)).toBe(2 * CHUNK);

      // Two PATCHes at once on two instances never both append: the second asks the first (which
      // holds the lease) to stop and commit what arrived, and then is told where the upload is.
      const racing = openPatch(resumable, 2 * CHUNK, data.subarray(2 * CHUNK, 3 * CHUNK), CHUNK / 2);
      while ((await leaseHolders()) === 0) await sleep(10);
      const second = await fetch(resumable, {
        method: "PATCH",
        headers: {
          ...TUS,
          "content-type": "application/offset+octet-stream",
          "upload-offset": String(2 * CHUNK),
        },
        body: data.subarray(2 * CHUNK, 3 * CHUNK),
      });
      racing.rest();
      const outcomes = [await racing.ended, second.status];
      expect([204, 409, 423]).toContain(second.status);
      expect(
        outcomes.filter((status) => status === 204).length,
        JSON.stringify(outcomes),
      ).toBeLessThanOrEqual(1);

      // kill -9 of the instance serving a PATCH, half of its body sent.
      const now = await tusOffset(resumable);
      const patchIndex = patchesBefore();
      const cut = openPatch(resumable, now, data.subarray(now, now + CHUNK), CHUNK / 2);
      // Killed once it writes: its lease taken, with half a chunk on its way.
      while ((await leaseHolders()) === 0) await sleep(10);
      await sleep(100);
      const serving = proxy.served.filter((s) => s.method === "PATCH")[patchIndex]?.instance as string;
      const victim = instances.find((instance) => instance.baseUrl === serving) as ServerProcess;
      await victim.kill("SIGKILL");
      proxy.drop(serving);
      expect(await cut.ended).toBe("cut");

      // The rest through the two left. The killed one's lease names a process of this host that no
      // longer runs, so they take it over at once: no 423 (instances on other hosts wait it out,
      // test/blobs/upload-leases.test.ts).
      await tusUpload(resumable, data.length, slice, { chunk: CHUNK, trip: seen });
      expect(seen.locked).toEqual([]);
      // The upload's PATCHes reached more than one instance (which ones depends on the other
      // requests in the round: with no 423s to retry, few enough to miss one of three).
      const patchedOn = new Set(proxy.served.filter((s) => s.method === "PATCH").map((s) => s.instance));
      expect(patchedOn.size).toBeGreaterThanOrEqual(2);

      await call(base, "POST", `/v1/transfers/${presigned.id}/confirm`, key);
      const download = await fetch(`${base}/v1/transfers/${presigned.id}/download`, {
        headers: { ...auth, "x-service-agent": "bob" },
      });
      const link = ((await download.json()) as { files: { download_url: string }[] }).files[0]
        ?.download_url as string;
      const got = Buffer.from(await (await fetch(link)).arrayBuffer());
      expect({ length: got.length, sha256: sha256(got) }).toEqual({
        length: data.length,
        sha256: sha256(data),
      });

      // Each of bob's streams that is still on a live instance tells of the transfer.
      const received = (stream: EventStreamReader) =>
        stream.events.some((event) => (event.data as { id?: string }).id === presigned.id);
      const streamDeadline = Date.now() + 10_000;
      while (!streams.some(received) && Date.now() < streamDeadline) await sleep(50);
      expect(streams.filter(received).length).toBeGreaterThan(0);

      // Webhooks: a few test messages and the transfer's, each arriving exactly once.
      const expected = [];
      for (let i = 0; i < 6; i++)
        expected.push(
          (await call(base, "POST", `/v1/agents/${bob.id}/webhook-test`, key)).message_id as string,
        );
      const ids = () => receiver.received.map((r) => String(r.headers["webhook-id"]));
      const deadline = Date.now() + 20_000;
      while (!expected.every((id) => ids().includes(id)) && Date.now() < deadline) await sleep(50);
      await sleep(1500);
      const counts = new Map<string, number>();
      for (const id of ids()) counts.set(id, (counts.get(id) ?? 0) + 1);
      expect(
        expected.every((id) => counts.get(id) === 1),
        JSON.stringify([...counts]),
      ).toBe(true);
      expect(
        [...counts.values()].every((n) => n === 1),
        JSON.stringify([...counts]),
      ).toBe(true);
      expect(receiver.messages().some((m) => m.type === "transfer.received")).toBe(true);

      // Housekeeping: a day later on every instance, the one-time transfer's files are purged once.
      const live = instances.filter((instance) => instance !== victim);
      await Promise.all(
        live.map((instance) =>
          call(instance.baseUrl, "POST", "/v1/admin/clock", ADMIN_TOKEN, { advance_seconds: 86_400 }),
        ),
      );
      const purges = async () =>
        Number(
          (
            await client.query(
              "select count(*) as n from events where type = 'TransferFilesDeleted' and stream_id like $1",
              [`%${presigned.id}%`],
            )
          ).rows[0].n,
        );
      const purgeDeadline = Date.now() + 15_000;
      while ((await purges()) === 0 && Date.now() < purgeDeadline) await sleep(100);
      await sleep(2500);
      expect(await purges()).toBe(1);
    }, 120_000);
  },
);
