import { randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createIdentity, HandoffClient } from "@handoff/sdk";
import type { Locator, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildWebApp } from "../../web/build.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { type Browser, chromiumSkipReason, launchChromium } from "../support/browser.js";
import { tempDir } from "../support/databases.js";
import { outboxMessages } from "../support/outbox.js";
import { freePort } from "../support/server-process.js";

if (chromiumSkipReason) console.warn(`[handoff tests] browser suite skipped: ${chromiumSkipReason}`);

/** Set (npm run screenshots) to write a picture of each page into that folder. */
const SCREENSHOTS = process.env.HANDOFF_SCREENSHOTS;
const PERSON = "dana@example.com";
const LOGIN_PASSWORD = "correct horse battery";
const RECEIVING_PASSWORD = "receiving staple 42";

async function snap(page: Page, name: string): Promise<void> {
  if (!SCREENSHOTS) return;
  mkdirSync(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true });
}

/** Waits for `success` to show; an error the page reports instead fails at once, in its words. */
async function until(page: Page, success: Locator): Promise<void> {
  const failed = page.locator('main .status[data-kind="error"]').first();
  await Promise.race([
    success.first().waitFor({ timeout: 60_000 }),
    failed.waitFor({ timeout: 60_000 }).then(async () => {
      throw new Error(`the page reported: ${await failed.textContent()}`);
    }),
  ]);
}

/** Waits until a live region in `scope` reports success saying `text`. */
function statusSays(page: Page, text: string, scope = page.locator("main")): Promise<void> {
  return until(page, scope.locator('.status[data-kind="ok"]', { hasText: text }));
}

const suite = `a person in the browser (headless Chromium)${chromiumSkipReason ? `: skipped, ${chromiumSkipReason}` : ""}`;

describe.skipIf(chromiumSkipReason !== "")(suite, () => {
  let t: TestApp;
  let browser: Browser;
  let page: Page;
  let baseUrl: string;
  const web = tempDir("handoff-web-build-");
  const work = tempDir("handoff-browser-");
  const consoleErrors: string[] = [];

  beforeAll(async () => {
    await buildWebApp(web.path);
    const port = await freePort();
    baseUrl = `http://127.0.0.1:${port}`;
    t = await startTestApp({ env: { PUBLIC_BASE_URL: baseUrl }, app: { webRoot: web.path } });
    await t.app.listen({ port, host: "127.0.0.1" });
    browser = await launchChromium();
    page = await browser.context.newPage();
    // A CSP violation or a script error is a failure even when the flow gets through. Chromium
    // also logs each 4xx answer; the one expected is GET /v1/auth/receiving-key's 404 (none set yet).
    page.on("console", (message) => {
      const expected =
        message.location().url.endsWith("/v1/auth/receiving-key") && message.text().includes("404");
      if (message.type() === "error" && !expected) consoleErrors.push(message.text());
    });
    page.on("pageerror", (error) => consoleErrors.push(error.message));
  });

  afterAll(async () => {
    await browser?.close();
    await t?.close();
    web.remove();
    work.remove();
  });

  it("receives a file an agent sent before the account existed, and sends one back; both byte-identical", async () => {
    // An agent sends to an e-mail address nobody has signed up with yet.
    const { apiKey } = await t.newAccount();
    const identity = createIdentity("report-bot");
    const agent = new HandoffClient({ baseUrl, apiKey, identity });
    await agent.registerAgent(identity, { name: "Report bot" });
    const report = Buffer.concat([Buffer.from("%PDF-1.7 quarterly report\n"), randomBytes(300_000)]);
    const reportPath = join(work.path, "q3-report.pdf");
    writeFileSync(reportPath, report);
    const pending = await agent.send({ to: PERSON, paths: [reportPath], message: "Your Q3 report" });
    expect(pending.status).toBe("pending_recipient");

    await page.goto(`${baseUrl}/`);
    await page.getByRole("heading", { level: 1 }).waitFor();
    await snap(page, "home");

    // Sign up; the verification link arrives in the outbox.
    await page.getByRole("link", { name: "Create an account" }).click();
    await page.getByLabel("E-mail address").fill(PERSON);
    await page.getByLabel("Your name (optional)").fill("Dana");
    await page.getByLabel("Password").fill(LOGIN_PASSWORD);
    await snap(page, "signup");
    await page.getByRole("button", { name: "Create account" }).click();
    await until(page, page.getByRole("heading", { name: "Check your e-mail" }));
    // No SMTP here: the page says where the e-mail went and how to read it.
    await until(page, page.getByText("its outbox folder, DATA_DIR/outbox"));
    expect(await page.locator("main").textContent()).toContain("handoff outbox");

    // The e-mail goes out from a reactor after the sign-up is recorded: wait for it.
    let link: string | undefined;
    for (let i = 0; !link; i++) {
      expect(i, "a verify e-mail with a link to the web app").toBeLessThan(200);
      const mail = outboxMessages(t.service.config.dataDir).find(
        (m) => m.type === "verify" && m.to.includes(PERSON),
      );
      link = mail && new RegExp(`${baseUrl}/verify\\?token=[^\\s"<>]+`).exec(mail.text)?.[0];
      if (!link) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    await page.goto(link as string);
    await statusSays(page, "is confirmed");
    expect(page.url()).toBe(`${baseUrl}/verify`);
    await snap(page, "verify");

    // Log in, then set the receiving password: the pending transfer activates to the new key.
    await page.getByRole("link", { name: "Log in" }).last().click();
    await page.getByLabel("E-mail address").fill(PERSON);
    await page.getByLabel("Password").fill(LOGIN_PASSWORD);
    await snap(page, "login");
    await page.getByRole("button", { name: "Log in" }).click();
    await until(page, page.getByRole("heading", { name: "Set your receiving password" }));
    await page.getByLabel("Receiving password", { exact: true }).fill(RECEIVING_PASSWORD);
    await page.getByLabel("Repeat it").fill(RECEIVING_PASSWORD);
    await snap(page, "receiving-password");
    await page.getByRole("button", { name: "Set receiving password" }).click();
    await until(page, page.getByText("Unlocked in this tab"));

    const item = page.locator(`[data-transfer="${pending.id}"]`);
    for (let i = 0; !(await item.locator(".badge.active").count()); i++) {
      expect(i, "the transfer activates once the receiving key is set").toBeLessThan(50);
      await page.getByRole("button", { name: "Refresh" }).click();
      await page.waitForTimeout(200);
    }

    // Download: decrypted in the browser, saved through the service worker's stream.
    const downloading = page.waitForEvent("download");
    await item.getByRole("button", { name: "Download" }).click();
    const download = await downloading;
    expect(download.suggestedFilename()).toBe("q3-report.pdf");
    const saved = join(work.path, "saved.pdf");
    await download.saveAs(saved);
    await statusSays(page, "decrypted and verified", item);
    expect(readFileSync(saved).equals(report)).toBe(true);
    expect(await item.textContent()).not.toContain("in memory");
    await snap(page, "inbox");

    // Send a file to the agent, encrypted in the browser; the agent decrypts it with the SDK.
    const reply = Buffer.concat([Buffer.from("signed contract\n"), randomBytes(200_000)]);
    await page.getByRole("link", { name: "Send" }).click();
    await page.getByLabel("Agent", { exact: true }).fill("report-bot");
    await page
      .getByLabel("Files")
      .setInputFiles({ name: "contract.pdf", mimeType: "application/pdf", buffer: reply });
    await page.getByLabel("Message (optional)").fill("Signed, thanks");
    await snap(page, "send");
    await page.getByRole("button", { name: "Encrypt and send" }).click();
    await statusSays(page, "end-to-end encrypted");
    const sentText = (await page.locator('.status[data-kind="ok"]').textContent()) ?? "";
    const transferId = /transfer (tr_\w+)/.exec(sentText)?.[1] as string;
    expect(transferId).toBeTruthy();

    const received = await agent.receive(transferId, { outDir: join(work.path, "agent-inbox") });
    expect(received.files.map((file) => file.name)).toEqual(["contract.pdf"]);
    expect(readFileSync(join(work.path, "agent-inbox", "contract.pdf")).equals(reply)).toBe(true);
    const transfer = await agent.transfer(transferId);
    expect(transfer).toMatchObject({ mode: "human-to-agent", sender: PERSON, is_encrypted: true });

    // Settings: a person's session manages the account's API keys.
    await page.getByRole("link", { name: "Settings" }).click();
    await page.getByLabel("Name of a new key").fill("laptop script");
    await page.getByRole("button", { name: "Create API key" }).click();
    const issued = (await page.locator("code.secret").textContent({ timeout: 30_000 })) ?? "";
    expect(issued).toMatch(/^hnd_/);
    await page.getByRole("cell", { name: "laptop script", exact: true }).waitFor();
    await page.getByRole("heading", { name: "Connections" }).waitFor();
    await snap(page, "settings");
    const profile = await fetch(`${baseUrl}/v1/api-keys`, { headers: { authorization: `Bearer ${issued}` } });
    expect(profile.status).toBe(200);

    expect(consoleErrors).toEqual([]);
  });
});
