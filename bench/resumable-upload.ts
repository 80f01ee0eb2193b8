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
 *   npm run bench -- resumable
 *
 * The figures are for 1 GiB and 4 GiB; the defaults are small so that the benchmark can
 * run beside other work. Environment: BENCH_RESUMABLE_MIB (default 64; the issue's: 1024),
 * BENCH_CUT_MIB (default 64; the issue's: 4096), BENCH_RUNS (default 2: best of).
 */
import { createHash, randomBytes, randomInt } from "node:crypto";
import http from "node:http";
import { join } from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
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
const RUNS = Number(process.env.BENCH_RUNS ?? 2);
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

async function main(): Promise<void> {
  guard(9 * 60 * 1000, "resumable-upload");
  const temp = tempRoot("handoff-bench-resumable");
  console.log(
    `# resumable uploads: ${sizeLabel(SIZE)} uninterrupted, ${sizeLabel(CUT_SIZE)} with ${CUTS} cuts; ` +
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
  } finally {
    // Both servers are stopped at once: neither waits on the other's shutdown.
    await Promise.all([handoff?.stop(), baseline?.stop()]);
    temp.cleanup();
  }
}

await main();
