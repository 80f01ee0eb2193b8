/**
 * A request link's page (/r/{token}, decisions 10.4) in headless Chromium: a person with no
 * account sends one large file to an agent through the link, encrypted in the page (HOE1) and
 * uploaded through tus, against the same file sent through the same page and the same PATCHes with
 * the encryption taken out (a build of its own, never served: bench/request-page-plain-chunks.ts
 * stands in for web/src/wire-chunks.ts; the page's other assets are the served ones). Figures: each
 * run's throughput from the click to the confirmation, their ratio, and the page's JS heap (CDP
 * Performance metrics, JSHeapUsedSize, sampled every 50 ms) at rest with the file chosen and at its
 * peak during the send. The agent then receives the encrypted one and checks its bytes. Figures
 * only, never a timed test.
 *
 *   npm run bench -- request-page        (BENCH_REQUEST_PAGE_MIB, default 1024)
 *
 * Targets (issue 33): encrypted throughput at least 70 % of the unencrypted one; peak JS heap at
 * most 64 MiB over rest.
 */
import { createWriteStream, readFileSync } from "node:fs";
import { join } from "node:path";
import { pipeline } from "node:stream/promises";
import { fileURLToPath } from "node:url";
import { createIdentity, HandoffClient } from "@handoff/sdk";
import type { Page } from "playwright-core";
import { chromiumSkipReason, launchChromium } from "../test/support/browser.js";
import { buildWebApp } from "../web/build.js";
import {
  createAccount,
  fileSha256,
  guard,
  loadAverage,
  MiB,
  mibPerSecond,
  patternSource,
  type ServerChild,
  startHandoff,
  tempRoot,
  verdict,
} from "./support.js";

const SIZE = Number(process.env.BENCH_REQUEST_PAGE_MIB ?? 1024) * MiB;
const RATIO_TARGET = 0.7;
const HEAP_TARGET = 64 * MiB;
const PLAIN_CHUNKS = fileURLToPath(new URL("./request-page-plain-chunks.ts", import.meta.url));

interface Run {
  ms: number;
  restHeap: number;
  peakHeap: number;
  transferId: string;
}

/**
 * Serves `page` the baseline build's document and assets instead of the served ones (same origin,
 * same headers, the CSP included), so the API and the uploads are the service's own.
 */
async function serveBuild(page: Page, dir: string): Promise<void> {
  await page.route(
    (url) => url.pathname.startsWith("/r/") || url.pathname.startsWith("/assets/"),
    async (route) => {
      const url = new URL(route.request().url());
      const file = url.pathname.startsWith("/r/") ? "index.html" : url.pathname.slice(1);
      // The served document's headers: the CSP and the rest, as the service sends them.
      const served = await route.fetch({ url: `${url.origin}/` });
      await route.fulfill({
        status: 200,
        headers: { ...served.headers(), "content-type": contentType(file) },
        body: readFileSync(join(dir, file)),
      });
    },
  );
}

const contentType = (file: string) =>
  file.endsWith(".html")
    ? "text/html; charset=utf-8"
    : file.endsWith(".css")
      ? "text/css; charset=utf-8"
      : file.endsWith(".wasm")
        ? "application/wasm"
        : "text/javascript; charset=utf-8";

/**
 * Sends `source` through the link's page, measuring the send and the page's JS heap. Routes end
 * once the page is loaded: a routed page has every request pass through Playwright, PATCHes too.
 */
async function sendThroughPage(page: Page, link: string, source: string): Promise<Run> {
  await page.goto(link);
  await page.getByLabel("Files").setInputFiles(source);
  await page.unrouteAll();
  const cdp = await page.context().newCDPSession(page);
  await cdp.send("Performance.enable");
  const heap = async () => {
    const { metrics } = await cdp.send("Performance.getMetrics");
    return metrics.find((metric) => metric.name === "JSHeapUsedSize")?.value ?? 0;
  };
  await cdp.send("HeapProfiler.collectGarbage");
  const restHeap = await heap();
  let peakHeap = restHeap;
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      peakHeap = Math.max(peakHeap, await heap());
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  })();
  const start = performance.now();
  try {
    await page.getByRole("button", { name: "Encrypt and send" }).click();
    const done = page.getByRole("heading", { level: 1, name: "Sent" });
    const failed = page.locator('main .status[data-kind="error"]');
    await Promise.race([
      done.waitFor({ timeout: 8 * 60_000 }),
      failed.waitFor({ timeout: 8 * 60_000 }).then(async () => {
        throw new Error(`the page reported: ${await failed.textContent()}`);
      }),
    ]);
  } finally {
    sampling = false;
    await sampler;
  }
  const ms = performance.now() - start;
  const transferId = (await page.locator("main .transfer-id").innerText()).trim();
  await cdp.detach();
  return { ms, restHeap, peakHeap, transferId };
}

const mib = (bytes: number) => `${(bytes / MiB).toFixed(1).padStart(6)} MiB`;

async function main(): Promise<void> {
  guard(9 * 60 * 1000, "request-page");
  if (chromiumSkipReason) throw new Error(chromiumSkipReason);
  const temp = tempRoot("handoff-bench-request-page");
  console.log(
    `# request link page: ${SIZE / MiB} MiB through /r/{token} in headless Chromium, encrypted vs not; ` +
      `node ${process.version}, load average ${loadAverage()}`,
  );
  await buildWebApp();
  const plainBuild = join(temp.dir, "plain-web");
  await buildWebApp(plainBuild, "warn", [{ find: /^\.\/wire-chunks\.js$/, replacement: PLAIN_CHUNKS }]);
  let server: ServerChild | null = null;
  const browser = await launchChromium();
  try {
    server = await startHandoff({ dataDir: join(temp.dir, "server") });
    const account = await createAccount(server.baseUrl, "bench-request-page@example.com", "scale");
    const identity = createIdentity("bench-inbox");
    const agent = new HandoffClient({ baseUrl: server.baseUrl, apiKey: account.apiKey, identity });
    await agent.registerAgent(identity, { name: "Bench inbox" });
    const source = join(temp.dir, "payload.bin");
    await pipeline(patternSource(SIZE), createWriteStream(source));

    const plainPage = await browser.context.newPage();
    await serveBuild(plainPage, plainBuild);
    const plain = await sendThroughPage(
      plainPage,
      (await agent.createRequest({ title: "Baseline: the same page, unencrypted" })).url,
      source,
    );
    await plainPage.close();
    const encryptedPage = await browser.context.newPage();
    const encrypted = await sendThroughPage(
      encryptedPage,
      (await agent.createRequest({ title: "Encrypted in the page" })).url,
      source,
    );
    await encryptedPage.close();

    const out = join(temp.dir, "received");
    await agent.receive(encrypted.transferId, { outDir: out, receipt: false });
    const intact = (await fileSha256(join(out, "payload.bin"))) === (await fileSha256(source));

    console.log("");
    console.log("                      throughput      JS heap at rest   peak        growth");
    for (const [name, run] of [
      ["unencrypted (base)", plain],
      ["encrypted (HOE1)", encrypted],
    ] as const) {
      console.log(
        `  ${name.padEnd(19)} ${mibPerSecond(SIZE, run.ms).toFixed(1).padStart(6)} MiB/s   ${mib(run.restHeap)}      ` +
          `${mib(run.peakHeap)}  ${mib(run.peakHeap - run.restHeap)}`,
      );
    }
    const ratio = plain.ms / encrypted.ms;
    const growth = encrypted.peakHeap - encrypted.restHeap;
    console.log(
      `  encrypted / unencrypted throughput ${(ratio * 100).toFixed(0)} % (target ≥ ${RATIO_TARGET * 100} %): ${verdict(ratio >= RATIO_TARGET)}`,
    );
    console.log(
      `  encrypted peak JS heap over rest ${mib(growth).trim()} (target ≤ 64 MiB): ${verdict(growth <= HEAP_TARGET)}`,
    );
    console.log(`  the agent received the encrypted file byte-exact: ${verdict(intact)}`);
    console.log(`load average at the end: ${loadAverage()}`);
  } finally {
    await browser.close();
    await server?.stop();
    temp.cleanup();
  }
}

await main();
