/**
 * The web app's streaming, measured in headless Chromium: a person downloads one large file an
 * agent sent (decrypted by the service worker as the browser saves it), then sends one of the same
 * size to the agent (encrypted into the origin private file system, uploaded from there). Figures:
 * the browser's memory (PSS summed over all its processes, so shared pages count once; sampled
 * every 50 ms) at rest before each step and at its peak during it, beside the file size; and each
 * step's throughput. Figures only, never a timed test.
 *
 *   npm run bench -- web            (or: npm run build && node --import tsx bench/web-app.ts)
 *
 * Environment: BENCH_WEB_SIZE_MIB (default 1024). Target (decisions 4.8): a 1 GB file does not
 * need 1 GB of memory; here, the growth over rest stays under 300 MB at any file size (what grows
 * is garbage the collector has not taken yet, not the file: compare two sizes).
 */
import { createWriteStream, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { pipeline } from "node:stream/promises";
import { createIdentity, HandoffClient } from "@handoff/sdk";
import type { Locator, Page } from "playwright-core";
import { chromiumSkipReason, launchChromium } from "../test/support/browser.js";
import { outboxMessages } from "../test/support/outbox.js";
import { buildWebApp } from "../web/build.js";
import {
  ADMIN_TOKEN,
  createAccount,
  fileSha256,
  guard,
  loadAverage,
  MiB,
  mibPerSecond,
  patternSource,
  requestJson,
  type ServerChild,
  sleep,
  startHandoff,
  tempRoot,
  verdict,
} from "./support.js";

const SIZE = Number(process.env.BENCH_WEB_SIZE_MIB ?? 1024) * MiB;
const GROWTH_LIMIT_KB = (300 * 1e6) / 1024;
const PERSON = "bench-person@example.com";
const PASSWORD = "bench login password";
const RECEIVING = "bench receiving password";

/** Every process under `root` (the browser and its zygotes, renderers, utilities). */
function descendants(root: number): number[] {
  const parents = new Map<number, number[]>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      parents.set(ppid, [...(parents.get(ppid) ?? []), Number(entry)]);
    } catch {
      // gone meanwhile
    }
  }
  const all = [root];
  for (let i = 0; i < all.length; i++) all.push(...(parents.get(all[i] as number) ?? []));
  return all;
}

/** The browser process: the one whose command line names this profile and has no --type. */
function browserPid(profile: string): number {
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, "utf8");
      if (cmdline.includes(profile) && !cmdline.includes("--type=")) return Number(entry);
    } catch {
      // gone meanwhile
    }
  }
  throw new Error("the browser process was not found");
}

function browserPssKb(root: number): number {
  let total = 0;
  for (const pid of descendants(root)) {
    try {
      total += Number(/^Pss:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, "utf8"))?.[1] ?? 0);
    } catch {
      // gone meanwhile
    }
  }
  return total;
}

/** Peak browser memory while `work` runs. */
async function peakDuring<T>(
  root: number,
  work: () => Promise<T>,
): Promise<{ result: T; peakKb: number; ms: number }> {
  let peakKb = browserPssKb(root);
  const timer = setInterval(() => {
    peakKb = Math.max(peakKb, browserPssKb(root));
  }, 50);
  const start = performance.now();
  try {
    const result = await work();
    return { result, peakKb, ms: performance.now() - start };
  } finally {
    clearInterval(timer);
  }
}

/** Rest: the smallest of a few samples a moment apart, after the previous step's garbage settled. */
async function restKb(root: number): Promise<number> {
  await sleep(2000);
  let least = Number.POSITIVE_INFINITY;
  for (let i = 0; i < 10; i++) {
    least = Math.min(least, browserPssKb(root));
    await sleep(100);
  }
  return least;
}

/**
 * Sign-up and verification through the API (the browser test covers those pages), then the plan
 * whose file size limit admits the file.
 */
async function signUp(server: ServerChild, dataDir: string): Promise<void> {
  const signup = await requestJson<{ account: { id: string } }>("POST", `${server.baseUrl}/v1/auth/signup`, {
    body: { email: PERSON, password: PASSWORD },
  });
  if (signup.status !== 201) throw new Error(`signup answered ${signup.status}`);
  const plan = await requestJson("PATCH", `${server.baseUrl}/v1/admin/accounts/${signup.json.account.id}`, {
    headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    body: { plan: "scale" },
  });
  if (plan.status !== 200) throw new Error(`plan change answered ${plan.status}`);
  // A reactor sends the e-mail after the sign-up is recorded.
  let token: string | undefined;
  for (let i = 0; !token; i++) {
    if (i === 300) throw new Error("no verify e-mail in the outbox");
    const mail = outboxMessages(dataDir).find((m) => m.type === "verify");
    token = mail && /verify\?token=([^\s"<>]+)/.exec(mail.text)?.[1];
    if (!token) await sleep(100);
  }
  const verify = await requestJson("POST", `${server.baseUrl}/v1/auth/verify`, { body: { token } });
  if (verify.status !== 200) throw new Error(`verify answered ${verify.status}`);
}

async function logInAndSetKey(page: Page, baseUrl: string): Promise<void> {
  await page.goto(`${baseUrl}/login`);
  await page.getByLabel("E-mail address").fill(PERSON);
  await page.getByLabel("Password").fill(PASSWORD);
  await page.getByRole("button", { name: "Log in" }).click();
  await page.getByLabel("Receiving password", { exact: true }).fill(RECEIVING);
  await page.getByLabel("Repeat it").fill(RECEIVING);
  await page.getByRole("button", { name: "Set receiving password" }).click();
  await page.getByText("Unlocked in this tab").waitFor({ timeout: 60_000 });
}

/** Waits for the step's status line to say it is done; an error it reports instead ends the run. */
async function outcome(scope: Locator): Promise<void> {
  const line = scope.locator('.status[data-kind="ok"], .status[data-kind="error"]').first();
  await line.waitFor({ timeout: 8 * 60_000 });
  if ((await line.getAttribute("data-kind")) === "error")
    throw new Error(`the page reported: ${await line.textContent()}`);
}

const mb = (kb: number) => `${((kb * 1024) / 1e6).toFixed(0).padStart(5)} MB`;

async function main(): Promise<void> {
  guard(9 * 60 * 1000, "web-app");
  if (chromiumSkipReason) throw new Error(chromiumSkipReason);
  const temp = tempRoot("handoff-bench-web");
  console.log(
    `# web app: streaming download and upload of ${SIZE / MiB} MiB in headless Chromium; ` +
      `node ${process.version}, load average ${loadAverage()}`,
  );
  await buildWebApp();
  const dataDir = join(temp.dir, "server");
  let server: ServerChild | null = null;
  const browser = await launchChromium();
  try {
    server = await startHandoff({ dataDir });
    const baseUrl = server.baseUrl;
    const account = await createAccount(baseUrl, "bench-web-agent@example.com", "scale");
    const identity = createIdentity("bench-agent");
    const agent = new HandoffClient({ baseUrl, apiKey: account.apiKey, identity });
    await agent.registerAgent(identity);
    const source = join(temp.dir, "payload.bin");
    await pipeline(patternSource(SIZE), createWriteStream(source));
    const sourceHash = await fileSha256(source);

    const sent = await agent.send({ to: PERSON, paths: [source] });
    await signUp(server, dataDir);
    const page = await browser.context.newPage();
    await logInAndSetKey(page, baseUrl);
    const root = browserPid(browser.profile);

    const item = page.locator(`[data-transfer="${sent.id}"]`);
    while (!(await item.locator(".badge.active").count())) {
      await page.getByRole("button", { name: "Refresh" }).click();
      await sleep(500);
    }
    const downloadRest = await restKb(root);
    const download = await peakDuring(root, async () => {
      const started = page.waitForEvent("download");
      await item.getByRole("button", { name: "Download" }).click();
      const saved = await (await started).path();
      await outcome(item);
      return saved;
    });
    if ((await fileSha256(download.result)) !== sourceHash)
      throw new Error("the download differs from the file sent");

    await page.getByRole("link", { name: "Send" }).click();
    await page.getByLabel("Agent", { exact: true }).fill("bench-agent");
    await page.getByLabel("Files").setInputFiles(source);
    const uploadRest = await restKb(root);
    const upload = await peakDuring(root, async () => {
      await page.getByRole("button", { name: "Encrypt and send" }).click();
      await outcome(page.locator("main"));
    });

    console.log("");
    console.log("              rest        peak        growth   growth / file   throughput   target");
    let met = true;
    for (const [name, rest, step] of [
      ["download", downloadRest, download],
      ["upload", uploadRest, upload],
    ] as const) {
      const growth = Math.max(0, step.peakKb - rest);
      const share = (growth * 1024) / SIZE;
      met &&= growth < GROWTH_LIMIT_KB;
      console.log(
        `  ${name.padEnd(9)} ${mb(rest)}   ${mb(step.peakKb)}   ${mb(growth)}   ${(share * 100).toFixed(1).padStart(6)} %   ` +
          `${mibPerSecond(SIZE, step.ms).toFixed(0).padStart(5)} MiB/s   growth < 300 MB  ${verdict(growth < GROWTH_LIMIT_KB)}`,
      );
    }
    console.log(`  file ${(SIZE / 1e6).toFixed(0)} MB; browser memory growth under 300 MB: ${verdict(met)}`);
    console.log(`load average at the end: ${loadAverage()}`);
  } finally {
    await browser.close();
    await server?.stop();
    temp.cleanup();
  }
}

await main();
