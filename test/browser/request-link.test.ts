import { spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { createIdentity, HandoffClient, saveIdentity } from "@handoff/sdk";
import { encryptedSize, keyFingerprint } from "@handoff/sdk/crypto";
import { formatVerifierKey } from "@handoff/sdk/transparency";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildWebApp } from "../../web/build.js";
import { handoff, ROOT } from "../client/support.js";
import { advanceClock } from "../http/helpers.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { type Browser, chromiumSkipReason, launchChromium } from "../support/browser.js";
import { interceptPatches, snap, uploadingLine } from "../support/browser-page.js";
import { tempDir } from "../support/databases.js";
import { freePort } from "../support/server-process.js";

if (chromiumSkipReason) console.warn(`[handoff tests] request link page skipped: ${chromiumSkipReason}`);

/** Markup where text belongs: every one must show as its characters, never become an element. */
const HOSTILE = {
  agent: `<img src=x onerror="alert('agent')"> Invoice inbox`,
  title: `<script>alert('title')</script> Your March invoice`,
  message: `Hello!\n<b>bold</b> <img src=x onerror="alert('message')">\nThanks.`,
  sender: `<svg onload="alert('sender')">Ada`,
  file: `<img src=x onerror=alert(1)>.txt`,
};

/** Debian's python3 with what the Python client needs (decisions 5.7), else why its receive is skipped. */
const PYTHON = "/usr/bin/python3";
const pythonSkipReason =
  spawnSync(PYTHON, ["-c", "import cryptography, httpx"]).status === 0
    ? ""
    : `${PYTHON} with python3-cryptography and python3-httpx is missing`;
if (pythonSkipReason)
  console.warn(`[handoff tests] the Python client's receive is skipped: ${pythonSkipReason}`);

/** `python3 -m handoff ARGS` from the checkout, as the Python client's own tests run it. */
async function pythonHandoff(args: string[], env: Record<string, string>) {
  const child = spawn(PYTHON, ["-m", "handoff", ...args], {
    env: { ...process.env, ...env, PYTHONPATH: join(ROOT, "packages", "python", "src") },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (chunk: Buffer) => {
    stderr += chunk.toString("utf8");
  });
  child.stdout.resume();
  const [status] = (await once(child, "close")) as [number | null];
  return { status, stderr };
}

const axeSource = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

/** axe-core's serious and critical violations on the page as it is now (WCAG 2.x A and AA). */
async function seriousViolations(page: Page): Promise<string[]> {
  // Evaluated through the DevTools protocol, which the page's CSP does not govern.
  await page.evaluate(axeSource);
  const violations = (await page.evaluate(`axe
    .run(document, {
      runOnly: { type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"] },
      resultTypes: ["violations"],
    })
    .then((result) => result.violations.map((v) => ({
      id: v.id,
      impact: v.impact,
      targets: v.nodes.map((n) => n.target.join(" ")),
    })))`)) as { id: string; impact: string; targets: string[] }[];
  return violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .map((v) => `${v.id} (${v.impact}): ${v.targets.join(", ")}`);
}

/** Every stored blob, for checking the server holds no plaintext. */
function storedBlobs(dir: string): Buffer[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .map((entry) => join(entry.parentPath, entry.name))
    .filter((path) => statSync(path).isFile())
    .map((path) => readFileSync(path));
}

const suite = `a person answers a request link in the browser (headless Chromium)${chromiumSkipReason ? `: skipped, ${chromiumSkipReason}` : ""}`;

describe.skipIf(chromiumSkipReason !== "")(suite, () => {
  let t: TestApp;
  let baseUrl: string;
  let browser: Browser;
  let page: Page;
  let owner: HandoffClient;
  /** A second agent of the same account, named as people name theirs: the pictures for the docs show it. */
  let contracts: HandoffClient;
  let ownerEnv: Record<string, string>;
  let identityPath: string;
  let publicKey: Uint8Array;
  const web = tempDir("handoff-web-build-");
  const work = tempDir("handoff-request-page-");
  const problems: string[] = [];
  /** The folder the first test sends, and its transfer: the Python client receives it too. */
  let folder: { transferId: string; files: Record<string, Buffer> } | null = null;
  /** Every request the page makes to declare a transfer on a link. */
  const declared: string[] = [];

  beforeAll(async () => {
    await buildWebApp(web.path);
    const port = await freePort();
    baseUrl = `http://127.0.0.1:${port}`;
    t = await startTestApp({ env: { PUBLIC_BASE_URL: baseUrl }, app: { webRoot: web.path } });
    await t.app.listen({ port, host: "127.0.0.1" });
    const { apiKey } = await t.newAccount("team");
    const identity = createIdentity("invoices");
    publicKey = identity.x25519.publicKey;
    identityPath = join(work.path, "invoices.json");
    await saveIdentity(identityPath, identity);
    owner = new HandoffClient({ baseUrl, apiKey, identity });
    await owner.registerAgent(identity, { name: HOSTILE.agent });
    const contractsIdentity = createIdentity("contracts");
    contracts = new HandoffClient({ baseUrl, apiKey, identity: contractsIdentity });
    await contracts.registerAgent(contractsIdentity, { name: "Contracts desk" });
    ownerEnv = { HANDOFF_URL: baseUrl, HANDOFF_API_KEY: apiKey };

    browser = await launchChromium();
    page = await browser.context.newPage();
    // A script error, a CSP violation or an alert (markup run as script) fails the suite. Chromium
    // logs the 404 and 410 of a closed or unknown link, which the page expects and explains.
    page.on("console", (message) => {
      const expected =
        /status of (404|410)/.test(message.text()) && message.location().url.includes("/by-token/");
      if (message.type() === "error" && !expected) problems.push(message.text());
    });
    page.on("pageerror", (error) => problems.push(error.message));
    page.on("dialog", (dialog) => {
      problems.push(`a dialog opened: ${dialog.message()}`);
      void dialog.dismiss();
    });
    page.on("request", (request) => {
      if (
        request.method() === "POST" &&
        /\/by-token\/[^/]+\/transfers$/.test(new URL(request.url()).pathname)
      )
        declared.push(request.url());
    });
  });

  afterAll(async () => {
    await browser?.close();
    await t?.close();
    web.remove();
    work.remove();
  });

  it("sends a folder with no account: markup shown as text, encrypted in the page, the agent receives it byte-exact", async () => {
    const link = await owner.createRequest({
      title: HOSTILE.title,
      message: HOSTILE.message,
      maxFiles: 20,
      askSenderName: true,
      askSenderEmail: true,
    });
    const files: Record<string, Buffer> = {
      "README.md": Buffer.from("# Project\n"),
      ".settings": Buffer.from("hidden=yes\n"),
      "docs/guide.txt": Buffer.from("Chapter 1. Getting started.\n".repeat(1500)),
      "docs/data/sample.bin": randomBytes(150_000),
      [HOSTILE.file]: Buffer.from("a name, not markup\n"),
    };
    const root = join(work.path, "sender", "project");
    for (const [name, bytes] of Object.entries(files)) {
      mkdirSync(join(root, name, ".."), { recursive: true });
      writeFileSync(join(root, name), bytes);
    }

    await page.goto(link.url);
    const main = page.locator("main");
    await page.getByRole("heading", { level: 1, name: HOSTILE.title }).waitFor();
    // The title, the message (its lines kept), the agent's name and key fingerprint, all as text.
    expect(await page.title()).toBe(`${HOSTILE.title} · Handoff`);
    expect(await main.locator(".request-message").innerText()).toBe(HOSTILE.message);
    expect(await main.locator(".lead").innerText()).toBe(`${HOSTILE.agent} asks you to send files.`);
    expect(await main.locator(".fingerprint").innerText()).toBe(keyFingerprint(publicKey));
    await main.getByText("The service's transparency log proves this is the agent's current key.").waitFor();
    expect(await main.locator("img, script, b, svg").count()).toBe(0);
    expect(await seriousViolations(page)).toEqual([]);

    await page.getByLabel("Your name").fill(HOSTILE.sender);
    await page.getByLabel("Your e-mail address").fill("ada@example.com");
    await page.getByLabel("Or a folder").setInputFiles(root);
    await main.getByText("Chosen: 5 files").waitFor();
    await page.getByRole("button", { name: "Encrypt and send" }).click();

    // The confirmation takes focus and names the transfer.
    const done = page.getByRole("heading", { level: 1, name: "Sent" });
    await done.waitFor({ timeout: 60_000 });
    expect(await page.evaluate("document.activeElement?.textContent")).toBe("Sent");
    const transferId = (await main.locator(".transfer-id").innerText()).trim();
    expect(transferId).toMatch(/^tr_/);
    expect(await main.innerText()).toContain(`5 files (`);
    expect(await main.locator("img, script, svg").count()).toBe(0);
    expect(await seriousViolations(page)).toEqual([]);

    // The server holds ciphertext: each file's stored copy has its encrypted size, and no stored
    // blob holds any file's plaintext.
    const blobs = storedBlobs(join(t.service.config.dataDir, "blobs"));
    for (const [name, bytes] of Object.entries(files)) {
      expect(
        blobs.some((blob) => blob.length === encryptedSize(bytes.length)),
        name,
      ).toBe(true);
      expect(
        blobs.some((blob) => blob.includes(bytes.subarray(0, 32))),
        name,
      ).toBe(false);
    }

    // In the agent's inbox as a request transfer, the sender as typed and marked unverified.
    const [item] = (await owner.inbox()).transfers.filter((transfer) => transfer.id === transferId);
    expect(item).toMatchObject({
      mode: "request",
      request_id: link.id,
      sender: { kind: "link", name: HOSTILE.sender, email: "ada@example.com", verified: false },
    });
    expect(item?.files.map((file) => file.name).sort()).toEqual(
      Object.keys(files)
        .map((name) => `project/${name}`)
        .sort(),
    );

    // The SDK and the CLI receive the very bytes, in their folders.
    const bySdk = join(work.path, "sdk-out");
    await owner.receive(transferId, { outDir: bySdk });
    const byCli = join(work.path, "cli-out");
    const cli = await handoff(
      ["receive", transferId, "--identity", identityPath, "--out", byCli, "--no-receipt"],
      ownerEnv,
    );
    expect(cli.status, cli.stderr).toBe(0);
    for (const [name, bytes] of Object.entries(files)) {
      expect(readFileSync(join(bySdk, "project", name)).equals(bytes), `SDK ${name}`).toBe(true);
      expect(readFileSync(join(byCli, "project", name)).equals(bytes), `CLI ${name}`).toBe(true);
    }

    folder = { transferId, files };

    // One use of one: opened again, the link says it is closed.
    await page.goto(link.url);
    await page.getByRole("heading", { level: 1, name: "This link is closed" }).waitFor();
    expect(problems).toEqual([]);
  });

  it.skipIf(pythonSkipReason !== "")(
    `the Python client receives the folder byte-exact${pythonSkipReason ? `: skipped, ${pythonSkipReason}` : ""}`,
    async () => {
      const sent = folder as NonNullable<typeof folder>;
      expect(sent, "the folder of the first test").not.toBeNull();
      const out = join(work.path, "python-out");
      const python = await pythonHandoff(
        ["receive", sent.transferId, "--identity", identityPath, "--out", out, "--no-receipt"],
        ownerEnv,
      );
      expect(python.status, python.stderr).toBe(0);
      for (const [name, bytes] of Object.entries(sent.files))
        expect(readFileSync(join(out, "project", name)).equals(bytes), name).toBe(true);
    },
  );

  it("reads at phone width (375 px): nothing wider than the screen, no serious accessibility violation", async () => {
    const link = await contracts.createRequest({
      title: "Your signed contract",
      message: "Hello Ada,\nplease send the signed contract and its annexes (a folder is fine).\nThanks!",
      askSenderName: true,
    });
    await page.goto(link.url);
    await page.getByRole("heading", { level: 1, name: "Your signed contract" }).waitFor();
    await snap(page, "request-link");
    await page.setViewportSize({ width: 375, height: 812 });
    try {
      await page.reload();
      await page.getByRole("heading", { level: 1, name: "Your signed contract" }).waitFor();
      expect(await page.evaluate("document.documentElement.scrollWidth")).toBeLessThanOrEqual(375);
      expect(await seriousViolations(page)).toEqual([]);
      // The keyboard reaches every control in order: name, files, folder, send.
      await page.locator("main").focus();
      const reached: string[] = [];
      for (let i = 0; i < 4; i++) {
        await page.keyboard.press("Tab");
        reached.push(
          (await page.evaluate(
            "(document.activeElement.labels?.[0] ?? document.activeElement).textContent",
          )) as string,
        );
      }
      expect(reached).toEqual(["Your name", "Files", "Or a folder", "Encrypt and send"]);
      await snap(page, "request-link-phone");
    } finally {
      await page.setViewportSize({ width: 1100, height: 800 });
    }
    expect(problems).toEqual([]);
  });

  it("refuses what the link does not take before anything is sent: too many files (dropped), too many bytes", async () => {
    const link = await owner.createRequest({ title: "Two small files", maxFiles: 2, maxTotalSize: 100_000 });
    const before = declared.length;
    await page.goto(link.url);
    await page.getByRole("heading", { level: 1, name: "Two small files" }).waitFor();
    const status = page.locator('main .status[data-kind="error"]');

    // Three files dropped on the page count as chosen, as the pickers' do.
    const dropped = await page.evaluateHandle(`(() => {
      const data = new DataTransfer();
      for (const name of ["a.txt", "b.txt", "c.txt"]) data.items.add(new File([name], name, { type: "text/plain" }));
      return data;
    })()`);
    await page.locator("main .drop").dispatchEvent("drop", { dataTransfer: dropped });
    await page.getByText("Chosen: 3 files, 15 bytes: a.txt, b.txt, c.txt.").waitFor();
    await page.getByRole("button", { name: "Encrypt and send" }).click();
    await status.filter({ hasText: "This link takes at most 2 files; you chose 3." }).waitFor();

    await page
      .getByLabel("Files")
      .setInputFiles({ name: "big.bin", mimeType: "application/octet-stream", buffer: randomBytes(120_000) });
    await page.getByRole("button", { name: "Encrypt and send" }).click();
    await status.filter({ hasText: "This link takes at most 98 KB in all (encrypted)" }).waitFor();

    expect(declared.length).toBe(before);
    expect((await owner.listRequests()).find((r) => r.id === link.id)).toMatchObject({
      uses: 0,
      status: "active",
    });
    expect(problems).toEqual([]);
  });

  it("resumes after a reload mid-upload from the server's offset, once the same file is chosen again", async () => {
    const link = await contracts.createRequest({ title: "The dataset" });
    // 12 MiB: three PATCHes of 4 MiB; the second is held, then dropped by the reload.
    const big = randomBytes(12 * 1024 * 1024);
    const bigPath = join(work.path, "dataset.bin");
    writeFileSync(bigPath, big);
    const { patches, holding, release } = await interceptPatches(page, 2);

    await page.goto(link.url);
    await page.getByLabel("Files").setInputFiles(bigPath);
    await page.getByRole("button", { name: "Encrypt and send" }).click();
    await holding;
    await uploadingLine(page, "12 MB").waitFor();

    await page.reload();
    release();
    const card = page.locator("section.unfinished");
    await card
      .getByText("Unfinished upload: dataset.bin (12 MB) to Contracts desk — choose the same file to resume.")
      .waitFor();
    await snap(page, "request-link-resume");
    await card.getByLabel("The same file").setInputFiles(bigPath);
    await page.getByRole("heading", { level: 1, name: "Sent" }).waitFor({ timeout: 60_000 });
    const transferId = (await page.locator("main .transfer-id").innerText()).trim();
    await snap(page, "request-link-sent");
    await page.unroute("**/v1/uploads/**");

    // The first PATCH after the reload went on from the server's offset: the file went once.
    expect(patches[0]?.offset).toBe(0);
    expect(patches[1]?.offset).toBe(patches[0]?.bytes);
    expect(patches.reduce((sum, patch) => sum + patch.bytes, 0)).toBe(encryptedSize(big.length));

    const out = join(work.path, "dataset-out");
    await contracts.receive(transferId, { outDir: out });
    expect(readFileSync(join(out, "dataset.bin")).equals(big)).toBe(true);
    // Nothing is left to resume.
    await page.goto(`${baseUrl}/r/${link.token}`);
    await page.getByRole("heading", { level: 1, name: "This link is closed" }).waitFor();
    expect(problems).toEqual([]);
  });

  it("discards an upload a reload cut, asked first: its tus upload is terminated and nothing is left to resume", async () => {
    const link = await contracts.createRequest({ title: "Changed my mind" });
    const cut = await interceptPatches(page, 1);
    await page.goto(link.url);
    await page.getByLabel("Files").setInputFiles(join(work.path, "dataset.bin"));
    await page.getByRole("button", { name: "Encrypt and send" }).click();
    await cut.holding;
    await page.reload();
    cut.release();
    const card = page.locator("section.unfinished");
    await card.waitFor();
    const kept = `handoff.unfinished-uploads.request-link:${link.token}`;
    const [upload] = JSON.parse(
      (await page.evaluate(`localStorage.getItem(${JSON.stringify(kept)})`)) as string,
    );
    await card.getByRole("button", { name: "Discard" }).click();
    await page
      .getByRole("dialog", { name: "Discard this upload?" })
      .getByRole("button", { name: "Discard upload" })
      .click();
    await card.waitFor({ state: "detached" });
    await page.unroute("**/v1/uploads/**");
    const head = await fetch(upload.files[0].resumable_url, {
      method: "HEAD",
      headers: { "tus-resumable": "1.0.0" },
    });
    expect(head.status).toBe(404);
    expect(await page.evaluate(`localStorage.getItem(${JSON.stringify(kept)})`)).toBeNull();
    await page.reload();
    await page.getByRole("heading", { level: 1, name: "Changed my mind" }).waitFor();
    expect(await page.locator("section.unfinished").count()).toBe(0);
    expect(problems).toEqual([]);
  });

  it("encrypts nothing to a key the transparency log does not prove: a swapped key, a log key other than the one pinned", async () => {
    const link = await owner.createRequest({ title: "Proven keys only" });
    const before = declared.length;
    const refusedHeading = page.getByRole("heading", { level: 1, name: "This link's key cannot be trusted" });

    // The server (or something between) swaps the agent's key for one of its own: its proof no longer backs it.
    const byToken = `**/v1/requests/by-token/${link.token}`;
    await page.route(byToken, async (route) => {
      const response = await route.fetch();
      const body = await response.json();
      body.agent.public_key = randomBytes(32).toString("base64");
      await route.fulfill({ response, json: body });
    });
    await page.goto(link.url);
    await refusedHeading.waitFor();
    expect(await page.locator("main").innerText()).toContain(
      "the keys the server gave for agent 'invoices' are not backed by the transparency log",
    );
    expect(await page.getByRole("button", { name: "Encrypt and send" }).count()).toBe(0);
    await page.unroute(byToken);

    // This browser pinned the log's key at first use; a checkpoint signed by another key is refused.
    const pinned = (await page.evaluate("localStorage.getItem('handoff.log')")) as string;
    expect(JSON.parse(pinned).vkey).toMatch(/^127\.0\.0\.1/);
    const impostor = formatVerifierKey(JSON.parse(pinned).vkey.split("+")[0], randomBytes(32));
    await page.evaluate(
      `localStorage.setItem('handoff.log', ${JSON.stringify(JSON.stringify({ vkey: impostor, checkpoint: null }))})`,
    );
    await page.reload();
    await refusedHeading.waitFor();
    expect(await page.locator("main").innerText()).toContain("not backed by the transparency log");
    await page.evaluate(`localStorage.setItem('handoff.log', ${JSON.stringify(pinned)})`);
    await page.reload();
    await page.getByRole("heading", { level: 1, name: "Proven keys only" }).waitFor();

    expect(declared.length).toBe(before);
    expect(problems).toEqual([]);
  });

  it("a revoked or expired link shows it is closed and a forged token that it does not exist; no transfer is made", async () => {
    const received = (await owner.inbox()).transfers.length;
    const before = declared.length;
    const revoked = await owner.createRequest({ title: "Revoked" });
    await owner.revokeRequest(revoked.id);
    await page.goto(revoked.url);
    await page.getByRole("heading", { level: 1, name: "This link is closed" }).waitFor();
    expect(await page.locator("main").innerText()).toContain("Ask whoever sent it for a new one.");
    expect(await page.getByRole("button", { name: "Encrypt and send" }).count()).toBe(0);

    await page.goto(`${baseUrl}/r/hrq_${"A".repeat(32)}`);
    await page.getByRole("heading", { level: 1, name: "This link does not exist" }).waitFor();
    expect(await seriousViolations(page)).toEqual([]);
    await page.goto(`${baseUrl}/r/not-a-token`);
    await page.getByRole("heading", { level: 1, name: "This link does not exist" }).waitFor();

    const expiring = await owner.createRequest({ title: "Soon gone", expiresIn: "1h" });
    await advanceClock(t, 3600);
    await page.goto(expiring.url);
    await page.getByRole("heading", { level: 1, name: "This link is closed" }).waitFor();

    expect(declared.length).toBe(before);
    expect((await owner.inbox()).transfers.length).toBe(received);
    expect(problems).toEqual([]);
  });
});
