/**
 * The inbox event stream across instances (issue 23, decisions 8.4): two servers on one fresh
 * PostgreSQL database; transfers are created one at a time through the second, while the
 * recipient holds the event stream on the first and, beside it in the same run, the long-poll
 * (`GET /v1/transfers/inbox?wait=30`, the baseline). For each transfer: the time from the create's
 * 201 answer (and from its start) to the event on the stream, and to the long-poll's answer.
 * Target: p99 from a create to the event on the other instance ≤ 100 ms.
 *
 *   npm run build && node --import tsx bench/event-stream.ts
 *
 * Environment: BENCH_STREAM_TRANSFERS (default 300), BENCH_STREAM_GAP_MS (default 30: the pause
 * between creates, so each is timed alone), BENCH_POSTGRES_URL.
 */
import http from "node:http";
import { cpus } from "node:os";
import { join } from "node:path";
import {
  benchDatabase,
  createAccount,
  createTransfer,
  guard,
  KeyPool,
  loadAverage,
  pad,
  percentileOf,
  registerAgent,
  requestJson,
  type ServerChild,
  sleep,
  startHandoff,
  tempRoot,
  verdict,
} from "./support.js";

const TRANSFERS = Number(process.env.BENCH_STREAM_TRANSFERS ?? 300);
const GAP_MS = Number(process.env.BENCH_STREAM_GAP_MS ?? 30);
const TARGET_P99_MS = 100;
/** Creates allowed per API key and minute (decisions 3.15): each key serves at most this many. */
const CREATES_PER_KEY = 60;
const SENDER = "bench-sender";
const RECIPIENT = "bench-recipient";

/** When each transfer was heard, by id, on the monotonic clock. */
type Heard = Map<string, number>;

/** Holds the recipient's event stream on `server`; resolves once it is open. */
function holdStream(server: ServerChild, apiKey: string, heard: Heard): Promise<http.ClientRequest> {
  return new Promise((resolve, reject) => {
    const request = http.get(
      `${server.baseUrl}/v1/transfers/inbox/events`,
      {
        headers: {
          authorization: `Bearer ${apiKey}`,
          "x-service-agent": RECIPIENT,
          accept: "text/event-stream",
        },
      },
      (response) => {
        if (response.statusCode !== 200) reject(new Error(`event stream: ${response.statusCode}`));
        response.setEncoding("utf8");
        let text = "";
        response.on("data", (chunk: string) => {
          const now = performance.now();
          text += chunk;
          const frames = text.split("\n\n");
          text = frames.pop() ?? "";
          for (const frame of frames) {
            const data = frame.split("\n").find((line) => line.startsWith("data: "));
            if (data) heard.set((JSON.parse(data.slice(6)) as { id: string }).id, now);
          }
        });
        resolve(request);
      },
    );
    request.on("error", (error) => {
      if (!request.destroyed) reject(error);
    });
  });
}

/** Long-polls the recipient's inbox on `server` from `cursor` until `stopped`. */
async function longPoll(
  server: ServerChild,
  keys: KeyPool,
  cursor: string | null,
  heard: Heard,
  stopped: () => boolean,
): Promise<number> {
  let polls = 0;
  while (!stopped()) {
    const query = `wait=30&limit=100${cursor ? `&cursor=${cursor}` : ""}`;
    const answer = await requestJson<{ transfers: { id: string }[]; next_cursor: string | null }>(
      "GET",
      `${server.baseUrl}/v1/transfers/inbox?${query}`,
      { headers: { authorization: `Bearer ${await keys.take()}`, "x-service-agent": RECIPIENT } },
    );
    const now = performance.now();
    polls++;
    if (answer.status !== 200) throw new Error(`long-poll: ${answer.status} ${JSON.stringify(answer.json)}`);
    for (const transfer of answer.json.transfers) heard.set(transfer.id, now);
    cursor = answer.json.next_cursor ?? cursor;
  }
  return polls;
}

const summary = (values: number[]) =>
  ["50", "90", "99"].map((p) => `p${p} ${pad(percentileOf(values, Number(p)).toFixed(1), 6)} ms`).join(", ") +
  `, max ${pad(Math.max(...values).toFixed(1), 6)} ms`;

async function main(): Promise<void> {
  guard(5 * 60 * 1000, "event-stream");
  const temp = tempRoot("handoff-bench-stream");
  const database = await benchDatabase();
  const servers: ServerChild[] = [];
  console.log(
    `# event-stream: ${TRANSFERS} creates on one instance, heard on another (one PostgreSQL database), ` +
      `${GAP_MS} ms apart; the event stream beside the long-poll; node ${process.version}, ` +
      `${cpus().length} CPUs, load average ${loadAverage()}`,
  );
  try {
    // One data folder: the instances share the server key and the blobs, as on one volume.
    const dataDir = join(temp.dir, "handoff");
    for (let i = 0; i < 2; i++) {
      servers.push(await startHandoff({ dataDir, env: { DATABASE_URL: database.url } }));
    }
    const [holder, creator] = servers as [ServerChild, ServerChild];
    const account = await createAccount(creator.baseUrl, "bench-stream@example.com", "enterprise");
    await registerAgent(creator.baseUrl, account.apiKey, SENDER);
    await registerAgent(creator.baseUrl, account.apiKey, RECIPIENT);
    const keys = new KeyPool(creator.baseUrl, account.apiKey, CREATES_PER_KEY);
    await keys.fill(Math.ceil((TRANSFERS * 2) / CREATES_PER_KEY) + 2);

    const streamed: Heard = new Map();
    const polled: Heard = new Map();
    const stream = await holdStream(holder, account.apiKey, streamed);
    let done = false;
    const polling = longPoll(holder, keys, null, polled, () => done);
    await sleep(500);

    const sent: { id: string; start: number; answered: number }[] = [];
    for (let i = 0; i < TRANSFERS; i++) {
      const start = performance.now();
      const created = await createTransfer(creator.baseUrl, await keys.take(), {
        sender: SENDER,
        recipient: RECIPIENT,
        size: 256,
      });
      const answered = performance.now();
      if (created.status !== 201)
        throw new Error(`create: ${created.status} ${JSON.stringify(created.json)}`);
      sent.push({ id: created.json.id, start, answered });
      await sleep(GAP_MS);
    }
    const deadline = performance.now() + 10_000;
    while (sent.some(({ id }) => !streamed.has(id) || !polled.has(id)) && performance.now() < deadline)
      await sleep(20);
    done = true;
    stream.destroy();
    // One more transfer answers the long-poll still waiting, so it ends now rather than in 30 s.
    await createTransfer(creator.baseUrl, await keys.take(), {
      sender: SENDER,
      recipient: RECIPIENT,
      size: 1,
    });
    await polling;

    const missed = (heard: Heard) => sent.filter(({ id }) => !heard.has(id)).length;
    const delays = (heard: Heard, from: "start" | "answered") =>
      sent.filter(({ id }) => heard.has(id)).map((one) => (heard.get(one.id) as number) - one[from]);
    const streamP99 = percentileOf(delays(streamed, "answered"), 99);
    console.log("");
    console.log(`Create on instance 2 → heard on instance 1 (${TRANSFERS} transfers)`);
    console.log(
      `  event stream, from the 201     ${summary(delays(streamed, "answered"))}, missed ${missed(streamed)}`,
    );
    console.log(`  event stream, from the POST    ${summary(delays(streamed, "start"))}`);
    console.log(
      `  long-poll,    from the 201     ${summary(delays(polled, "answered"))}, missed ${missed(polled)}`,
    );
    console.log(`  long-poll,    from the POST    ${summary(delays(polled, "start"))}`);
    console.log(`  create (POST → 201)            ${summary(sent.map((one) => one.answered - one.start))}`);
    console.log(
      `  target: event stream p99 ≤ ${TARGET_P99_MS} ms from the create: ${streamP99.toFixed(1)} ms ` +
        `${verdict(streamP99 <= TARGET_P99_MS && missed(streamed) === 0)}`,
    );
    console.log(`load average at the end: ${loadAverage()}`);
  } finally {
    for (const server of servers) await server.stop();
    await database.drop();
    temp.cleanup();
  }
}

await main();
