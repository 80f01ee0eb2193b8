/**
 * Resumable uploads (issue 22, decisions 7.1/7.2), on the filesystem blob store:
 *
 * 1. Throughput: one uninterrupted tus upload (a single PATCH of the whole file to its
 *    `resumable_url`) and its download, against the plain node:http server that streams the same
 *    body to disk with fsync before answering (bench/baseline-server.ts), same run, best of
 *    BENCH_RUNS. Targets: upload ≥ 90 %, download ≥ 95 % of the baseline.
 * 2. Cuts: a file sent through `resumable_url` with the connection cut at five random points,
 *    each time resumed from the server's offset (HEAD, then PATCH from there), as the SDK does.
 *    Targets: it completes byte-exact (sha256 of the download), re-sends at most 5 × 8 MiB in
 *    all, and the service's RSS grows by less than 64 MB.
 *
 * 3. Interrupted twice: an encrypted `handoff send` (the real CLI process, from dist) killed with
 *    SIGKILL once the server holds a third of the file, then `handoff send --resume` killed at two
 *    thirds, then `--resume` once more to the end. Targets: the received file is byte-exact, and
 *    each of the three client processes peaks at 150 MB RSS or less (the kernel's figure, from
 *    /usr/bin/time).
 *
 *   npm run bench -- resumable
 *
 * The figures are for 1 GiB and 4 GiB; the defaults are small so that the benchmark can
 * run beside other work. Environment: BENCH_RESUMABLE_MIB (default 64; the issue's: 1024),
 * BENCH_CUT_MIB (default 64; the issue's: 4096), BENCH_INTERRUPTED_MIB (default 64; the issue's:
 * 1024), BENCH_RUNS (default 5: best of; a run right after another writes while the last one's
 * pages still go to disk, and any one run swings by a third).
 */
import type { ChildProcess } from "node:child_process";
import { createHash, randomBytes, randomInt } from "node:crypto";
import {
  createReadStream,
  createWriteStream,
  existsSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
} from "node:fs";
import http from "node:http";
import { join } from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { type ClientRun, mbText, RSS_LIMIT_KB, requireTime, timedHandoff } from "./client-process.js";
import {
  type Account,
  assertStatus,
  createAccount,
  downloadLinks,
  GiB,
  guard,
  idleRssKb,
  loadAverage,
  MiB,
  mb,
  mibPerSecond,
  pad,
  RssSampler,
  registerAgent,
  requestJson,
  type ServerChild,
  startBaseline,
  startHandoff,
  streamDownload,
  syncDisks,
  tempRoot,
  timed,
  uploadRaw,
  verdict,
} from "./support.js";

const SIZE = Number(process.env.BENCH_RESUMABLE_MIB ?? 64) * MiB;
const CUT_SIZE = Number(process.env.BENCH_CUT_MIB ?? 64) * MiB;
const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const INTERRUPTED_SIZE = Number(process.env.BENCH_INTERRUPTED_MIB ?? 64) * MiB;
const CUTS = 5;
const UPLOAD_TARGET = 0.9;
const DOWNLOAD_TARGET = 0.95;
const RESENT_LIMIT = CUTS * 8 * MiB;
const GROWTH_LIMIT_KB = 64 * 1000;
const TUS = { "tus-resumable": "1.0.0" };
const SENDER = "bench-sender";
const RECIPIENT = "bench-recipient";

const sizeLabel = (bytes: number) => (bytes >= GiB ? `${bytes / GiB} GiB` : `${bytes / MiB} MiB`);
const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`;

/** A presigned transfer of one file of `size` bytes: its id and the file's tus `resumable_url`. */
async function presigned(handoff: ServerChild, account: Account, size: number, name: string) {
  const answer = await requestJson<{ id: string; upload_urls: { resumable_url: string }[] }>(
    "POST",
    `${handoff.baseUrl}/v1/transfers/presigned`,
    {
      headers: { authorization: `Bearer ${account.apiKey}` },
      body: { mode: "agent-to-agent", sender: SENDER, recipient: RECIPIENT, files: [{ name, size }] },
    },
  );
  assertStatus("presigned create", answer, 201);
  const url = answer.json.upload_urls[0]?.resumable_url;
  if (!url) throw new Error("no resumable_url");
  return { id: answer.json.id, url };
}

async function confirm(handoff: ServerChild, account: Account, id: string): Promise<void> {
  const answer = await requestJson("POST", `${handoff.baseUrl}/v1/transfers/${id}/confirm`, {
    headers: { authorization: `Bearer ${account.apiKey}` },
  });
  assertStatus("confirm", answer, 200);
}

async function remove(handoff: ServerChild, account: Account, id: string): Promise<void> {
  await requestJson("DELETE", `${handoff.baseUrl}/v1/transfers/${id}`, {
    headers: { authorization: `Bearer ${account.apiKey}` },
  });
}

/** The one file's signed download link (the call counts a download). */
async function downloadUrl(handoff: ServerChild, account: Account, id: string): Promise<string> {
  const links = await downloadLinks(handoff.baseUrl, account.apiKey, id);
  assertStatus("download links", links, 200);
  const url = links.json.files[0]?.download_url;
  if (!url) throw new Error("no download_url");
  return url;
}

// ---------------------------------------------------------------------------------------------
// 1. One uninterrupted tus upload against the baseline

async function throughput(baseline: ServerChild, handoff: ServerChild, account: Account) {
  const up = { baseline: [] as number[], handoff: [] as number[] };
  const down = { baseline: [] as number[], handoff: [] as number[] };
  for (let run = 1; run <= RUNS; run++) {
    const name = `large-${run}.bin`;
    syncDisks();
    const bUp = await timed(() => uploadRaw(`${baseline.baseUrl}/blobs/${name}`, SIZE));
    if (bUp.value.status !== 201) throw new Error(`baseline upload: ${bUp.value.status} ${bUp.value.text}`);
    const { id, url } = await presigned(handoff, account, SIZE, name);
    syncDisks();
    const hUp = await timed(() =>
      uploadRaw(url, SIZE, "PATCH", {
        ...TUS,
        "content-type": "application/offset+octet-stream",
        "upload-offset": "0",
      }),
    );
    if (hUp.value.status !== 204 || hUp.value.headers["upload-offset"] !== String(SIZE))
      throw new Error(`tus upload: ${hUp.value.status} ${hUp.value.text}`);
    await confirm(handoff, account, id);
    syncDisks();
    const bDown = await timed(() => streamDownload(`${baseline.baseUrl}/blobs/${name}`));
    const link = await downloadUrl(handoff, account, id);
    const hDown = await timed(() => streamDownload(link));
    for (const got of [bDown.value, hDown.value])
      if (got.status !== 200 || got.bytes !== SIZE)
        throw new Error(`download: ${got.status}, ${got.bytes} of ${SIZE} bytes`);
    up.baseline.push(bUp.ms);
    up.handoff.push(hUp.ms);
    down.baseline.push(bDown.ms);
    down.handoff.push(hDown.ms);
    console.log(
      `run ${run}: upload baseline ${seconds(bUp.ms)}, tus ${seconds(hUp.ms)}; ` +
        `download baseline ${seconds(bDown.ms)}, handoff ${seconds(hDown.ms)}`,
    );
    await remove(handoff, account, id);
    await requestJson("DELETE", `${baseline.baseUrl}/blobs/${name}`);
  }
  const best = (runs: number[]) => Math.min(...runs);
  const rate = (runs: number[]) => `${pad(mibPerSecond(SIZE, best(runs)).toFixed(0), 6)} MiB/s`;
  const line = (what: string, runs: { baseline: number[]; handoff: number[] }, target: number) => {
    const ratio = best(runs.baseline) / best(runs.handoff);
    console.log(
      `  ${what} ${sizeLabel(SIZE).padEnd(8)} ${rate(runs.baseline)}  ${rate(runs.handoff)}  ` +
        `${pad((ratio * 100).toFixed(1), 6)}%   >= ${target * 100}%  ${verdict(ratio >= target)}`,
    );
  };
  console.log(`Throughput, best of ${RUNS} (ratio = handoff / baseline)`);
  console.log("                        baseline        handoff    ratio   target");
  line("tus upload", up, UPLOAD_TARGET);
  line("download  ", down, DOWNLOAD_TARGET);
}

// ---------------------------------------------------------------------------------------------
// 2. Five cuts, each resumed from the server's offset

/** One MiB of random bytes: byte p of the file is BLOCK[p mod 1 MiB], so any offset can be sent. */
const BLOCK = randomBytes(MiB);

/** The file's bytes from `offset` to `end`, with backpressure. */
function fileBytes(offset: number, end: number): Readable {
  let position = offset;
  return new Readable({
    highWaterMark: MiB,
    read() {
      while (position < end) {
        const start = position % MiB;
        const piece = BLOCK.subarray(start, Math.min(MiB, start + end - position));
        position += piece.length;
        if (!this.push(piece)) return;
      }
      this.push(null);
    },
  });
}

async function sha256Of(source: Readable): Promise<string> {
  const hash = createHash("sha256");
  for await (const chunk of source) hash.update(chunk as Buffer);
  return hash.digest("hex");
}

/** The upload's offset on the server (tus HEAD). */
function serverOffset(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const request = http.request(url, { method: "HEAD", headers: TUS }, (answer) => {
      answer.resume();
      const offset = Number(answer.headers["upload-offset"]);
      if (answer.statusCode === 200 && Number.isSafeInteger(offset)) resolve(offset);
      else reject(new Error(`HEAD ${answer.statusCode}`));
    });
    request.on("error", reject).end();
  });
}

/**
 * PATCHes the rest of the file from `offset`; with `cutAfter`, the connection is destroyed once
 * that many bytes are written, as a dropped network would. Answers the bytes written.
 */
function patchFrom(url: string, offset: number, cutAfter: number | null): Promise<number> {
  return new Promise((resolve, reject) => {
    let written = 0;
    const request = http.request(url, {
      method: "PATCH",
      headers: {
        ...TUS,
        "content-type": "application/offset+octet-stream",
        "upload-offset": String(offset),
        "content-length": String(CUT_SIZE - offset),
      },
    });
    request.on("response", (answer) => {
      answer.resume();
      if (answer.statusCode === 204) resolve(written);
      else reject(new Error(`PATCH ${answer.statusCode}`));
    });
    // A cut connection ends the request with an error or just a close: either way it is done.
    request.on("error", () => (cutAfter !== null ? resolve(written) : reject(new Error("PATCH failed"))));
    request.on("close", () => {
      if (cutAfter !== null) resolve(written);
    });
    const end = cutAfter === null ? CUT_SIZE : offset + cutAfter;
    const body = fileBytes(offset, end);
    body.on("data", (chunk: Buffer) => {
      written += chunk.length;
    });
    pipeline(body, request, { end: cutAfter === null }).then(
      () => {
        if (cutAfter !== null) request.destroy();
      },
      () => request.destroy(),
    );
  });
}

async function fiveCuts(handoff: ServerChild, account: Account) {
  const expected = await sha256Of(fileBytes(0, CUT_SIZE));
  const { id, url } = await presigned(handoff, account, CUT_SIZE, "cut.bin");
  const cuts = Array.from({ length: CUTS }, () => randomInt(1, CUT_SIZE)).sort((a, b) => a - b);
  const idleKb = await idleRssKb(handoff.pid);
  const sampler = new RssSampler(handoff.pid, 20);
  let sent = 0;
  const offsets: number[] = [];
  const { ms } = await timed(async () => {
    for (let offset = 0; offset < CUT_SIZE; offset = await serverOffset(url)) {
      offsets.push(offset);
      const cut = cuts.find((point) => point > offset);
      if (cut !== undefined) cuts.splice(cuts.indexOf(cut), 1);
      sent += await patchFrom(url, offset, cut === undefined ? null : cut - offset);
    }
  });
  const report = sampler.stop();
  await confirm(handoff, account, id);
  const link = await downloadUrl(handoff, account, id);
  const got = await new Promise<string>((resolve, reject) => {
    http.get(link, (answer) => sha256Of(answer).then(resolve, reject)).on("error", reject);
  });
  const resent = sent - CUT_SIZE;
  const growthKb = Math.max(report.peakKb, report.kernelPeakKb ?? 0) - idleKb;
  console.log("");
  console.log(
    `Five cuts: ${sizeLabel(CUT_SIZE)} in ${seconds(ms)}, ${offsets.length} PATCHes from offsets ${offsets.join(", ")}`,
  );
  console.log(`  byte-exact (sha256 of the download)       ${verdict(got === expected)}`);
  console.log(
    `  re-sent ${mb(resent / 1024)} MiB of at most ${mb(RESENT_LIMIT / 1024)} MiB          ${verdict(resent <= RESENT_LIMIT)}`,
  );
  console.log(
    `  service RSS growth ${mb(growthKb)} MiB, under ${GROWTH_LIMIT_KB / 1000} MB          ${verdict(growthKb < GROWTH_LIMIT_KB)}`,
  );
  await remove(handoff, account, id);
}

// ---------------------------------------------------------------------------------------------
// 3. An encrypted `handoff send` killed twice, finished with --resume

/** Bytes in the server's partial uploads (filesystem store: `.resumable/{key}/data`). */
function partialBytes(dir: string): number {
  if (!existsSync(dir)) return 0;
  let bytes = 0;
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true }))
    if (entry.isFile() && entry.name === "data") bytes += statSync(join(entry.parentPath, entry.name)).size;
  return bytes;
}

/** The process /usr/bin/time runs (its one child). */
function commandOf(time: ChildProcess): number {
  const children = readFileSync(`/proc/${time.pid}/task/${time.pid}/children`, "utf8").trim();
  const pid = Number(children.split(" ")[0]);
  if (!Number.isSafeInteger(pid) || pid <= 0) throw new Error("/usr/bin/time has no child yet");
  return pid;
}

/** `handoff ARGS`, killed (SIGKILL, no chance to tidy up) once the server holds `bytes` of the upload. */
async function killedOnceStored(
  args: string[],
  env: Record<string, string>,
  uploads: string,
  bytes: number,
): Promise<ClientRun> {
  let watch: NodeJS.Timeout | undefined;
  try {
    return await timedHandoff(args, env, [137], (time) => {
      watch = setInterval(() => {
        if (partialBytes(uploads) < bytes) return;
        clearInterval(watch);
        process.kill(commandOf(time), "SIGKILL");
      }, 10);
    });
  } finally {
    clearInterval(watch);
  }
}

async function interruptedTwice(handoff: ServerChild, account: Account, dir: string, uploads: string) {
  requireTime();
  const env = { HANDOFF_URL: handoff.baseUrl, HANDOFF_API_KEY: account.apiKey };
  const sender = join(dir, "cli-sender.json");
  const recipient = join(dir, "cli-recipient.json");
  await timedHandoff(["identity", "new", "--agent", "bench-cli-sender", "--out", sender], env);
  await timedHandoff(["identity", "new", "--agent", "bench-cli-recipient", "--out", recipient], env);
  const source = join(dir, "interrupted.bin");
  await pipeline(fileBytes(0, INTERRUPTED_SIZE), createWriteStream(source));
  const expected = await sha256Of(fileBytes(0, INTERRUPTED_SIZE));

  const first = await killedOnceStored(
    ["send", "--identity", sender, "--to", "bench-cli-recipient", source],
    env,
    uploads,
    INTERRUPTED_SIZE / 3,
  );
  const [state] = readdirSync(`${sender}.sends`);
  const transferId = state?.replace(/\.json$/, "");
  if (!transferId) throw new Error("the killed send left no state to resume");
  const resume = ["send", "--resume", transferId, "--identity", sender];
  const second = await killedOnceStored(resume, env, uploads, (2 * INTERRUPTED_SIZE) / 3);
  const last = await timedHandoff(resume, env);
  const out = join(dir, "interrupted-received");
  await timedHandoff(["receive", transferId, "--identity", recipient, "--out", out], env);
  const got = await sha256Of(createReadStream(join(out, "interrupted.bin")));
  rmSync(out, { recursive: true, force: true });
  rmSync(source, { force: true });

  console.log("");
  console.log(`Interrupted twice: an encrypted ${sizeLabel(INTERRUPTED_SIZE)} handoff send, SIGKILLed twice`);
  const runs = [
    ["send, killed at 1/3    ", first],
    ["--resume, killed at 2/3", second],
    ["--resume to the end    ", last],
  ] as const;
  for (const [what, run] of runs)
    console.log(`  ${what}  ${seconds(run.ms)}, client peak RSS ${mbText(run.peakKb)}`);
  const peakKb = Math.max(...runs.map(([, run]) => run.peakKb));
  console.log(`  byte-exact (sha256 of the received file)   ${verdict(got === expected)}`);
  console.log(
    `  client peak RSS ${mbText(peakKb).trim()}, at most 150 MB           ${verdict(peakKb <= RSS_LIMIT_KB)}`,
  );
  await remove(handoff, account, transferId);
}

async function main(): Promise<void> {
  guard(9 * 60 * 1000, "resumable-upload");
  const temp = tempRoot("handoff-bench-resumable");
  console.log(
    `# resumable uploads: ${sizeLabel(SIZE)} uninterrupted, ${sizeLabel(CUT_SIZE)} with ${CUTS} cuts, ` +
      `an encrypted ${sizeLabel(INTERRUPTED_SIZE)} send killed twice; ` +
      `node ${process.version}, load average ${loadAverage()}; both servers write under ${temp.dir}`,
  );
  let baseline: ServerChild | null = null;
  let handoff: ServerChild | null = null;
  try {
    baseline = await startBaseline({ dir: join(temp.dir, "baseline") });
    handoff = await startHandoff({ dataDir: join(temp.dir, "handoff") });
    const account = await createAccount(handoff.baseUrl, "bench-resumable@example.com", "scale");
    await registerAgent(handoff.baseUrl, account.apiKey, SENDER);
    await registerAgent(handoff.baseUrl, account.apiKey, RECIPIENT);
    await throughput(baseline, handoff, account);
    await fiveCuts(handoff, account);
    await interruptedTwice(handoff, account, temp.dir, join(temp.dir, "handoff", "blobs", ".resumable"));
  } finally {
    // Both servers are stopped at once: neither waits on the other's shutdown.
    await Promise.all([handoff?.stop(), baseline?.stop()]);
    temp.cleanup();
  }
}

await main();
