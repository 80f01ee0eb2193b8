/**
 * Several instances behind a round-robin balancer (issue 34): the compiled server, three
 * instances on one PostgreSQL database and one blob folder, behind the node:http round-robin proxy
 * of test/support/round-robin-proxy.ts (no sticky sessions: each request to the next instance).
 *
 * 1. Throughput: one tus upload of BENCH_INSTANCES_MIB in PATCHes of BENCH_CHUNK_MIB (each PATCH
 *    to the next instance, every one taking the upload's lease), against the same through a proxy
 *    in front of one instance alone. Best of BENCH_RUNS. Target: three ≥ 80 % of one.
 * 2. Kills: BENCH_KILL_RUNS uploads of BENCH_KILL_MIB through the three, each with the instance
 *    serving a PATCH killed with SIGKILL halfway through its body (restarted afterwards), each
 *    completed by the client's loop (HEAD, PATCH from the offset, 423 → its Retry-After), confirmed
 *    and downloaded. Target: 0 lost (did not complete) and 0 corrupted (sha256 differs).
 *
 *   npm run bench -- instances
 *
 * The figures: BENCH_INSTANCES_MIB=1024 BENCH_KILL_RUNS=20. The defaults are small so that
 * it can run beside other work (64 MiB, 3 runs, 5 kill runs of 32 MiB). Each kill run prints how
 * long the rest of the upload took after the kill and how many 423s it met: the instances share
 * one host, so the others take the killed process's lease over at once rather than wait it out.
 */
import { createHash, randomBytes } from "node:crypto";
import { RoundRobinProxy } from "../test/support/round-robin-proxy.js";
import { openPatch, type TusTrip, tusOffset, tusUpload } from "../test/support/tus-client.js";
import {
  type Account,
  assertStatus,
  benchDatabase,
  createAccount,
  downloadLinks,
  guard,
  loadAverage,
  MiB,
  mibPerSecond,
  pad,
  registerAgent,
  requestJson,
  type ServerChild,
  startHandoff,
  syncDisks,
  tempRoot,
  timed,
  verdict,
} from "./support.js";

const SIZE = Number(process.env.BENCH_INSTANCES_MIB ?? 64) * MiB;
const CHUNK = Number(process.env.BENCH_CHUNK_MIB ?? 8) * MiB;
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const KILL_RUNS = Number(process.env.BENCH_KILL_RUNS ?? 5);
const KILL_SIZE = Number(process.env.BENCH_KILL_MIB ?? 32) * MiB;
const TARGET = 0.8;

/** Byte p of a file: 1 MiB of random bytes rotated by a step per MiB, so no shifted copy hashes alike. */
const BLOCK = randomBytes(MiB);
function bytes(start: number, end: number): Buffer {
  const out = Buffer.allocUnsafe(end - start);
  for (let p = start; p < end; ) {
    const mib = Math.floor(p / MiB);
    const within = p % MiB;
    const take = Math.min(MiB - within, end - p);
    const from = (within + mib * 7919) % MiB;
    const first = BLOCK.subarray(from, Math.min(MiB, from + take));
    first.copy(out, p - start);
    if (first.length < take) BLOCK.copy(out, p - start + first.length, 0, take - first.length);
    p += take;
  }
  return out;
}
function sha256Of(length: number): string {
  const hash = createHash("sha256");
  for (let p = 0; p < length; p += 8 * MiB) hash.update(bytes(p, Math.min(length, p + 8 * MiB)));
  return hash.digest("hex");
}

async function presigned(base: string, account: Account, size: number): Promise<{ id: string; url: string }> {
  const answer = await requestJson<{ id: string; upload_urls: { resumable_url: string }[] }>(
    "POST",
    `${base}/v1/transfers/presigned`,
    {
      headers: { authorization: `Bearer ${account.apiKey}` },
      body: { mode: "agent-to-agent", sender: "alice", recipient: "bob", files: [{ name: "f.bin", size }] },
    },
  );
  assertStatus("presigned create", answer, 201);
  const path = new URL(answer.json.upload_urls[0]?.resumable_url ?? "").pathname;
  return { id: answer.json.id, url: `${base}${path}` };
}

/** Confirms, downloads through the proxy and answers the download's sha256 (null: it could not). */
async function confirmAndHash(base: string, account: Account, id: string): Promise<string | null> {
  const auth = { authorization: `Bearer ${account.apiKey}` };
  const confirmed = await requestJson("POST", `${base}/v1/transfers/${id}/confirm`, { headers: auth });
  if (confirmed.status !== 200) return null;
  const links = await downloadLinks(base, account.apiKey, id);
  const link = links.json.files[0]?.download_url;
  if (!link) return null;
  const answer = await fetch(`${base}${new URL(link).pathname}${new URL(link).search}`);
  const hash = createHash("sha256");
  for await (const chunk of answer.body as unknown as AsyncIterable<Uint8Array>) hash.update(chunk);
  await requestJson("DELETE", `${base}/v1/transfers/${id}`, { headers: auth });
  return hash.digest("hex");
}

async function main(): Promise<void> {
  guard(30 * 60_000, "instances");
  const { dir, cleanup } = tempRoot("handoff-bench-instances-");
  const database = await benchDatabase();
  const three = await RoundRobinProxy.start();
  const alone = await RoundRobinProxy.start();
  const env = { DATABASE_URL: database.url, PUBLIC_BASE_URL: three.url };
  const start = () => startHandoff({ dataDir: dir, env });
  const instances: ServerChild[] = [await start()];
  instances.push(...(await Promise.all([start(), start()])));
  for (const instance of instances) three.add(instance.baseUrl);
  alone.add((instances[0] as ServerChild).baseUrl);
  try {
    const account = await createAccount(three.url, "bench-instances@example.com", "team");
    for (const agent of ["alice", "bob"]) await registerAgent(three.url, account.apiKey, agent);
    console.log(
      `Three instances behind a round-robin proxy vs one, tus upload of ${SIZE / MiB} MiB in ${CHUNK / MiB} MiB PATCHes (load average ${loadAverage()})`,
    );
    const best = { one: Number.POSITIVE_INFINITY, three: Number.POSITIVE_INFINITY };
    for (let run = 1; run <= RUNS; run++) {
      for (const [name, proxy] of [
        ["one", alone],
        ["three", three],
      ] as const) {
        const { id, url } = await presigned(proxy.url, account, SIZE);
        syncDisks();
        const took = await timed(() => tusUpload(url, SIZE, bytes, { chunk: CHUNK }));
        best[name] = Math.min(best[name], took.ms);
        console.log(`run ${run}: ${name} ${(took.ms / 1000).toFixed(2)} s`);
        await requestJson("DELETE", `${three.url}/v1/transfers/${id}`, {
          headers: { authorization: `Bearer ${account.apiKey}` },
        });
      }
    }
    const ratio = best.one / best.three;
    console.log(`  one instance    ${pad(mibPerSecond(SIZE, best.one).toFixed(0), 6)} MiB/s`);
    console.log(`  three instances ${pad(mibPerSecond(SIZE, best.three).toFixed(0), 6)} MiB/s`);
    console.log(`  ratio ${(ratio * 100).toFixed(1)} %   >= ${TARGET * 100} %  ${verdict(ratio >= TARGET)}`);

    console.log(
      `\n${KILL_RUNS} uploads of ${KILL_SIZE / MiB} MiB, the instance serving a PATCH killed (SIGKILL) mid-body`,
    );
    const expected = sha256Of(KILL_SIZE);
    let lost = 0;
    let corrupted = 0;
    for (let run = 1; run <= KILL_RUNS; run++) {
      const begun = Date.now();
      let resumed = "";
      const { id, url } = await presigned(three.url, account, KILL_SIZE);
      const halfway = Math.floor(KILL_SIZE / CHUNK / 2) * CHUNK;
      try {
        await tusUpload(url, halfway, bytes, { chunk: CHUNK });
        const offset = await tusOffset(url);
        // The victim is the instance the cut PATCH reached (not the one that answered the HEAD).
        const before = three.served.length;
        const cut = openPatch(url, offset, bytes(offset, Math.min(KILL_SIZE, offset + CHUNK)), CHUNK / 2);
        while (three.served.length === before) await new Promise((resolve) => setTimeout(resolve, 5));
        await new Promise((resolve) => setTimeout(resolve, 100));
        const patched = three.served[before];
        if (patched?.method !== "PATCH") throw new Error(`the cut request was a ${patched?.method}`);
        const serving = patched.instance;
        const victim = instances.findIndex((instance) => instance.baseUrl === serving);
        (instances[victim] as ServerChild).killNow();
        three.drop(serving);
        await cut.ended;
        const killed = Date.now();
        const trip: TusTrip = { locked: [] };
        await tusUpload(url, KILL_SIZE, bytes, { chunk: CHUNK, trip });
        resumed = `, the rest ${((Date.now() - killed) / 1000).toFixed(1)} s after the kill with ${trip.locked.length} 423s`;
        const got = await confirmAndHash(three.url, account, id);
        if (got === null) lost++;
        else if (got !== expected) corrupted++;
        instances[victim] = await start();
        three.add((instances[victim] as ServerChild).baseUrl);
        if (victim === 0) {
          alone.drop(serving);
          alone.add((instances[0] as ServerChild).baseUrl);
        }
      } catch (error) {
        lost++;
        console.log(`run ${run}: ${error instanceof Error ? error.message : String(error)}`);
      }
      console.log(
        `run ${run}: ${((Date.now() - begun) / 1000).toFixed(1)} s${resumed}, lost ${lost}, corrupted ${corrupted}`,
      );
    }
    console.log(
      `  lost ${lost}, corrupted ${corrupted} of ${KILL_RUNS}   target 0  ${verdict(lost + corrupted === 0)}`,
    );
  } finally {
    for (const instance of instances) await instance.stop();
    await three.close();
    await alone.close();
    await database.drop();
    cleanup();
  }
}

await main();
