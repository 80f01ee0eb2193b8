/**
 * Request links (issue 33's second target): BENCH_SENDERS concurrent senders, each answering a
 * link of its own, all links of one agent, against the compiled server. Each sender reads its
 * link (GET by-token); once all have, all declare one encrypted file at once (POST
 * by-token/transfers: "the by-token create", timed), then each PUTs it to its upload link and
 * confirms. Beside it in the same run, at the same
 * concurrency, the baseline: the same file declared by an API key on the plain presigned path
 * (POST /v1/transfers/presigned), PUT and confirmed. Rounds alternate the two; best of BENCH_RUNS
 * by p99. Afterwards every link's transfer is counted in the agent's inbox (mode "request", its
 * request_id) and every link must show one use: none lost.
 *
 * The file is random bytes of an HOE1 file's size: the service never reads ciphertext, and the
 * tests (test/client/request-links.test.ts) show real encrypted sends received byte-exact.
 *
 *   npm run -s build:server && npm run bench -- requests
 *
 * Environment: BENCH_SENDERS (default 100), BENCH_RUNS (default 3), BENCH_FILE_BYTES (default
 * 4096), BENCH_DATABASE ("embedded", the default, or "postgres": a fresh database on
 * BENCH_POSTGRES_URL), BENCH_SENDER_NAME (default "Bench"; empty: the senders give no name). Each token takes 10 requests a minute; a sender makes 3 per link.
 */
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { createIdentity, encryptedSize, toBase64 } from "@handoff/sdk";
import {
  type Account,
  assertStatus,
  benchDatabase,
  createAccount,
  createApiKey,
  guard,
  type JsonAnswer,
  loadAverage,
  pad,
  percentileOf,
  requestBytes,
  requestJson,
  type ServerChild,
  startHandoff,
  tempRoot,
  timed,
  verdict,
} from "./support.js";

const SENDERS = Number(process.env.BENCH_SENDERS ?? 100);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const FILE_BYTES = Number(process.env.BENCH_FILE_BYTES ?? 4096);
const DATABASE = process.env.BENCH_DATABASE ?? "embedded";
/** What each sender types as their name ("" for none: no person is made to seal it under). */
const SENDER_NAME = process.env.BENCH_SENDER_NAME ?? "Bench";
const TARGET_P99_MS = 150;
const AGENT = "inbox";
const SENDER = "sender";

const WIRE_SIZE = encryptedSize(FILE_BYTES);
const CIPHERTEXT = randomBytes(WIRE_SIZE);
const declaredFile = () => ({
  name: "invoice.pdf",
  size: WIRE_SIZE,
  content_type: "application/pdf",
  encryption_iv: randomBytes(16).toString("base64"),
});
/** An X25519 key wrap's size (decisions 5.2: E ‖ N ‖ C): the service stores it, never opens it. */
const wrappedKey = () => randomBytes(92).toString("base64");

interface Created {
  transfer_id?: string;
  id?: string;
  upload_urls: { upload_url: string; method: string; headers: Record<string, string> }[];
  confirm_url?: string;
}

async function put(created: Created): Promise<void> {
  const link = created.upload_urls[0];
  if (!link) throw new Error("no upload link");
  const answer = await requestBytes(link.method, link.upload_url, CIPHERTEXT, { headers: link.headers });
  assertStatus("upload", answer, 200);
}

/** Resolves once `count` callers are waiting on it: the creates of a round start together. */
function barrier(count: number): () => Promise<void> {
  let waiting = 0;
  let open: () => void = () => {};
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return () => {
    waiting++;
    if (waiting === count) open();
    return opened;
  };
}

/**
 * One person answering one link: read it, then (once every sender has read theirs, so the creates
 * meet the same concurrency as the baseline's) declare the file (timed), upload, confirm.
 */
async function answerLink(
  baseUrl: string,
  token: string,
  together: () => Promise<void>,
): Promise<{ read: number; create: number }> {
  const at = `${baseUrl}/v1/requests/by-token/${token}`;
  const read = await timed(() =>
    requestJson<{ agent: { key_version: number; key_proof: unknown } }>("GET", at),
  );
  assertStatus("read link", read.value, 200);
  await together();
  const create = await timed(() =>
    requestJson<Created>("POST", `${at}/transfers`, {
      body: {
        files: [declaredFile()],
        encrypted_key: wrappedKey(),
        recipient_key_version: read.value.json.agent.key_version,
        ...(SENDER_NAME ? { sender_name: SENDER_NAME } : {}),
      },
    }),
  );
  assertStatus("by-token create", create.value, 201);
  await put(create.value.json);
  const confirmed = await requestJson("POST", create.value.json.confirm_url as string);
  assertStatus("by-token confirm", confirmed, 200);
  return { read: read.ms, create: create.ms };
}

/** The baseline: the same file declared by an API key on the presigned path, uploaded, confirmed. */
async function presignedSend(baseUrl: string, apiKey: string): Promise<number> {
  const auth = { authorization: `Bearer ${apiKey}` };
  const create = await timed(() =>
    requestJson<Created>("POST", `${baseUrl}/v1/transfers/presigned`, {
      headers: auth,
      body: {
        mode: "agent-to-agent",
        sender: SENDER,
        recipient: AGENT,
        is_encrypted: true,
        encrypted_key: wrappedKey(),
        encryption_algorithm: "AES-256-GCM",
        files: [declaredFile()],
      },
    }),
  );
  assertStatus("presigned create", create.value, 201);
  await put(create.value.json);
  const confirmed = await requestJson("POST", `${baseUrl}/v1/transfers/${create.value.json.id}/confirm`, {
    headers: auth,
  });
  assertStatus("presigned confirm", confirmed, 200);
  return create.ms;
}

/** SENDERS fresh one-use links to the agent, made before the round (not measured). */
async function makeLinks(baseUrl: string, apiKey: string): Promise<{ id: string; token: string }[]> {
  return Promise.all(
    Array.from({ length: SENDERS }, async (_, i) => {
      const answer = await requestJson<{ id: string; token: string }>("POST", `${baseUrl}/v1/requests`, {
        headers: { authorization: `Bearer ${apiKey}` },
        body: { agent: AGENT, title: `Bench link ${i}`, max_files: 1, expires_in: "1h" },
      });
      assertStatus("create link", answer, 201);
      return answer.json;
    }),
  );
}

/** The agent's key in a signed checkpoint (about a second after registration): links show key_proof from then on. */
async function keyProven(baseUrl: string, apiKey: string, agentUuid: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    const agent = await requestJson<{ key_proof: unknown }>("GET", `${baseUrl}/v1/agents/${agentUuid}`, {
      headers: { authorization: `Bearer ${apiKey}` },
    });
    if (agent.json.key_proof) return;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  throw new Error("no checkpoint covered the agent's key in 30 s");
}

interface InboxPage {
  transfers: { mode: string; request_id?: string | null }[];
  next_cursor: string | null;
  has_more: boolean;
}

/** Every request transfer in the agent's inbox, by the link it came through. */
async function inboxByLink(baseUrl: string, apiKey: string): Promise<Map<string, number>> {
  const byLink = new Map<string, number>();
  let cursor: string | null = null;
  do {
    const page: JsonAnswer<InboxPage> = await requestJson<InboxPage>(
      "GET",
      `${baseUrl}/v1/transfers/inbox?limit=100${cursor ? `&cursor=${cursor}` : ""}`,
      {
        headers: { authorization: `Bearer ${apiKey}`, "x-service-agent": AGENT },
      },
    );
    assertStatus("inbox", page, 200);
    for (const transfer of page.json.transfers) {
      if (transfer.mode === "request" && transfer.request_id)
        byLink.set(transfer.request_id, (byLink.get(transfer.request_id) ?? 0) + 1);
    }
    cursor = page.json.has_more ? page.json.next_cursor : null;
  } while (cursor);
  return byLink;
}

interface Round {
  read: number[];
  create: number[];
  baseline: number[];
}

async function round(server: ServerChild, account: Account, links: { token: string }[]): Promise<Round> {
  const together = barrier(links.length);
  const senders = await Promise.all(links.map((link) => answerLink(server.baseUrl, link.token, together)));
  const baselineKey = await createApiKey(server.baseUrl, account.apiKey, "bench-baseline");
  const baseline = await Promise.all(
    Array.from({ length: SENDERS }, () => presignedSend(server.baseUrl, baselineKey)),
  );
  return { read: senders.map((s) => s.read), create: senders.map((s) => s.create), baseline };
}

const ms = (value: number) => `${pad(value.toFixed(1), 7)} ms`;

async function main(): Promise<void> {
  guard(9 * 60_000, "request-links");
  const root = tempRoot("handoff-bench-requests-");
  const database = DATABASE === "postgres" ? await benchDatabase() : null;
  const server = await startHandoff({
    dataDir: join(root.dir, "data"),
    env: database ? { DATABASE_URL: database.url } : {},
  });
  try {
    const account = await createAccount(server.baseUrl, "bench-requests@example.com", "scale");
    const identity = createIdentity(AGENT);
    const registered = await requestJson<{ id: string }>("POST", `${server.baseUrl}/v1/agents/register`, {
      headers: { authorization: `Bearer ${account.apiKey}` },
      body: { agent_id: AGENT, public_key: toBase64(identity.x25519.publicKey) },
    });
    assertStatus("register agent", registered, 201);
    const sender = await requestJson("POST", `${server.baseUrl}/v1/agents/register`, {
      headers: { authorization: `Bearer ${account.apiKey}` },
      body: { agent_id: SENDER, public_key: randomBytes(32).toString("base64") },
    });
    assertStatus("register sender", sender, 201);
    await keyProven(server.baseUrl, account.apiKey, registered.json.id);

    console.log(
      `request links: ${SENDERS} concurrent senders on ${SENDERS} links of one agent, ${FILE_BYTES} B files (${WIRE_SIZE} B encrypted), ${SENDER_NAME ? "a sender name" : "no sender name"}, ${DATABASE}, best of ${RUNS} by p99; load ${loadAverage()}`,
    );
    const made: string[] = [];
    let best: Round | null = null;
    for (let run = 1; run <= RUNS; run++) {
      // A key of its own for each phase: the account's first one stays far from its 600 a minute.
      const links = await makeLinks(
        server.baseUrl,
        await createApiKey(server.baseUrl, account.apiKey, "bench-links"),
      );
      made.push(...links.map((link) => link.id));
      const result = await round(server, account, links);
      const p99 = percentileOf(result.create, 99);
      console.log(
        `  run ${run}: by-token create p50 ${ms(percentileOf(result.create, 50))}, p99 ${ms(p99)} | presigned create (baseline) p50 ${ms(percentileOf(result.baseline, 50))}, p99 ${ms(percentileOf(result.baseline, 99))} | link read p99 ${ms(percentileOf(result.read, 99))}`,
      );
      if (!best || p99 < percentileOf(best.create, 99)) best = result;
    }

    const counter = await createApiKey(server.baseUrl, account.apiKey, "bench-count");
    const landed = await inboxByLink(server.baseUrl, counter);
    const listed = await requestJson<{ requests: { id: string; uses: number }[] }>(
      "GET",
      `${server.baseUrl}/v1/requests`,
      { headers: { authorization: `Bearer ${counter}` } },
    );
    const usedOnce = listed.json.requests.filter((link) => made.includes(link.id) && link.uses === 1).length;
    const inInbox = made.filter((id) => landed.get(id) === 1).length;
    const lost = made.length - inInbox;

    const chosen = best as Round;
    const createP99 = percentileOf(chosen.create, 99);
    const baselineP99 = percentileOf(chosen.baseline, 99);
    console.log(
      `  best run: by-token create p99 ${ms(createP99)} beside presigned create p99 ${ms(baselineP99)} (${(createP99 / baselineP99).toFixed(2)}× the baseline)`,
    );
    console.log(
      `  transfers: ${made.length} sent, ${inInbox} in the agent's inbox once each, ${usedOnce} links used once, ${lost} lost`,
    );
    const ok = createP99 <= TARGET_P99_MS && lost === 0 && usedOnce === made.length;
    console.log(
      `  ${verdict(createP99 <= TARGET_P99_MS)} by-token create p99 ≤ ${TARGET_P99_MS} ms; ${verdict(lost === 0 && usedOnce === made.length)} every transfer landed, none lost`,
    );
    if (!ok) process.exitCode = 1;
  } finally {
    await server.stop();
    await database?.drop();
    root.cleanup();
  }
}

await main();
