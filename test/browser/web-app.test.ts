import { randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createIdentity, HandoffClient } from "@handoff/sdk";
import type { Locator, Page, Request } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildWebApp } from "../../web/build.js";
import { waitUntil } from "../http/transfer-helpers.js";
import { randomPublicKey, startTestApp, type TestApp } from "../support/app.js";
import { type Browser, chromiumSkipReason, launchChromium } from "../support/browser.js";
import {
  interceptPatches,
  snap,
  snapPart,
  statusSays,
  until,
  uploadingLine,
} from "../support/browser-page.js";
import { tempDir } from "../support/databases.js";
import { outboxMessages } from "../support/outbox.js";
import { freePort } from "../support/server-process.js";
import { type Receiver, startReceiver } from "../support/webhook-receiver.js";

if (chromiumSkipReason) console.warn(`[handoff tests] browser suite skipped: ${chromiumSkipReason}`);

const PERSON = "dana@example.com";
const LOGIN_PASSWORD = "correct horse battery";
const NEW_LOGIN_PASSWORD = "a fresh login passphrase";
const RESET_LOGIN_PASSWORD = "reset after forgetting it";
const MISSING_PAGE = "/no-such-page";
/** Set in beforeAll: where the server listens and keeps its outbox. */
let baseUrl: string;
let dataDir: string;
const RECEIVING_PASSWORD = "receiving staple 42";

/**
 * Holds back the answer to the page's next request for its received list (later ones pass):
 * `release` lets it through, waits for its answer and stops holding.
 */
async function holdNextListRequest(page: Page) {
  const isList = (url: URL) =>
    url.pathname === "/v1/transfers" && url.searchParams.get("direction") === "received";
  let letThrough = () => {};
  const held = new Promise<void>((resolve) => {
    letThrough = resolve;
  });
  let heldRequest: Request | null = null;
  await page.route(isList, async (route) => {
    if (heldRequest) return route.continue();
    heldRequest = route.request();
    await held;
    await route.continue();
  });
  return {
    request: () => heldRequest,
    async release() {
      letThrough();
      await (heldRequest as Request | null)?.response();
      await page.unroute(isList);
    },
  };
}

/**
 * The link of the `count`-th e-mail of `type` to `to`, once the mail reactor has written it (it
 * goes out after the event is recorded).
 */
async function linkInMail(type: string, to: string, path: string, count = 1): Promise<string> {
  for (let i = 0; ; i++) {
    expect(i, `a ${type} e-mail to ${to} with a link to ${path}`).toBeLessThan(300);
    const mails = outboxMessages(dataDir).filter((m) => m.type === type && m.to.includes(to));
    const link =
      mails[count - 1] &&
      new RegExp(`${baseUrl}${path}\\?token=[^\\s"<>]+`).exec(mails[count - 1]?.text ?? "")?.[0];
    if (link) return link;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

let saves = 0;

/** Clicks a download button: the name the browser saves under, and the bytes once saved. */
async function saveOne(page: Page, button: Locator): Promise<{ name: string; bytes: Promise<Buffer> }> {
  const started = page.waitForEvent("download");
  await button.click();
  const download = await started;
  const to = join(tmpdir(), `handoff-saved-${process.pid}-${++saves}`);
  return {
    name: download.suggestedFilename(),
    bytes: download.saveAs(to).then(() => {
      const bytes = readFileSync(to);
      rmSync(to);
      return bytes;
    }),
  };
}

const suite = `a person in the browser (headless Chromium)${chromiumSkipReason ? `: skipped, ${chromiumSkipReason}` : ""}`;

describe.skipIf(chromiumSkipReason !== "")(suite, () => {
  let t: TestApp;
  let browser: Browser;
  let page: Page;
  const web = tempDir("handoff-web-build-");
  const work = tempDir("handoff-browser-");
  const consoleErrors: string[] = [];
  /** The agent of the first test, and the transfer the person sent it there. */
  let agent: HandoffClient;
  let transferId: string;
  let agentAccountEmail: string;
  let receiver: Receiver;

  beforeAll(async () => {
    await buildWebApp(web.path);
    const port = await freePort();
    baseUrl = `http://127.0.0.1:${port}`;
    // Webhooks go to a receiver on 127.0.0.1, which only WEBHOOKS_ALLOW_PRIVATE allows (8.1).
    t = await startTestApp({
      env: { PUBLIC_BASE_URL: baseUrl, WEBHOOKS_ALLOW_PRIVATE: "1" },
      app: { webRoot: web.path },
    });
    await t.app.listen({ port, host: "127.0.0.1" });
    dataDir = t.service.config.dataDir;
    browser = await launchChromium();
    page = await browser.context.newPage();
    // A CSP violation or a script error is a failure even when the flow gets through. Chromium
    // also logs each 4xx answer; those expected are GET /v1/auth/receiving-key's 404 (none set
    // yet), the 404 of the page that does not exist and the 401 of a login with a changed password.
    page.on("console", (message) => {
      const url = message.location().url;
      const text = message.text();
      const expected =
        ((url.endsWith("/v1/auth/receiving-key") || url.endsWith(MISSING_PAGE)) && text.includes("404")) ||
        (url.endsWith("/v1/auth/login") && text.includes("401"));
      if (message.type() === "error" && !expected) consoleErrors.push(message.text());
    });
    page.on("pageerror", (error) => consoleErrors.push(error.message));
  });

  afterAll(async () => {
    await receiver?.close();
    await browser?.close();
    await t?.close();
    web.remove();
    work.remove();
  });

  it("receives a file an agent sent before the account existed, and sends one back; both byte-identical", async () => {
    // An agent sends to an e-mail address nobody has signed up with yet.
    const { apiKey, email } = await t.newAccount();
    agentAccountEmail = email;
    const identity = createIdentity("report-bot");
    agent = new HandoffClient({ baseUrl, apiKey, identity });
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
    const link = await linkInMail("verify", PERSON, "/verify");
    await page.goto(link);
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
    // The list drawn with the new key is held back, and the Refresh of the list drawn before it
    // (no key yet) is clicked meanwhile: the list it draws must open files with the new key.
    const held = await holdNextListRequest(page);
    await page.getByRole("button", { name: "Set receiving password" }).click();
    await until(page, page.getByText("Unlocked in this tab"));
    await waitUntil(() => held.request() !== null, "the new key's request for the list");
    await page.getByRole("button", { name: "Refresh" }).click();
    await held.release();

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
    transferId = /transfer (tr_\w+)/.exec(sentText)?.[1] as string;
    expect(transferId).toBeTruthy();
    // Decisions 9.6: the browser pinned the log's key and kept the checkpoint that proved the agent's key.
    const pinnedLog = JSON.parse((await page.evaluate("localStorage.getItem('handoff.log')")) ?? "null") as {
      vkey: string;
      checkpoint: string;
    } | null;
    const logKey = (await (await fetch(`${baseUrl}/v1/log/key`)).json()) as { vkey: string };
    expect(pinnedLog?.vkey).toBe(logKey.vkey);
    expect(pinnedLog?.checkpoint).toMatch(/\/handoff\n\d+\n/);

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

  it("lets the person run their account: files one by one, sent transfers, delete, keys, passwords, 404", async () => {
    await browser.context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: baseUrl });
    // Two files, now that the person has a receiving key: ready at once.
    const notes = Buffer.concat([Buffer.from("notes\n"), randomBytes(150_000)]);
    const data = randomBytes(6 * 1024 * 1024);
    writeFileSync(join(work.path, "notes.txt"), notes);
    writeFileSync(join(work.path, "data.bin"), data);
    const two = await agent.send({
      to: PERSON,
      paths: [join(work.path, "notes.txt"), join(work.path, "data.bin")],
      maxDownloads: 3,
    });
    expect(two.status).toBe("active");

    // The tab is still unlocked: move within the app (a reload would lock it).
    await page.getByRole("link", { name: "Inbox" }).click();
    const item = page.locator(`[data-transfer="${two.id}"]`);
    for (let i = 0; !(await item.count()); i++) {
      expect(i, "the new transfer is listed").toBeLessThan(50);
      await page.getByRole("button", { name: "Refresh" }).click();
      await page.waitForTimeout(200);
    }
    const statusTexts = item.locator(".status");
    // Every text the transfer's status line shows, kept in the page for the checks below.
    await page.evaluate(`{
      const item = document.querySelector('[data-transfer="${two.id}"]');
      window.seen = [];
      new MutationObserver(() => window.seen.push(item.querySelector(".status").textContent))
        .observe(item, { subtree: true, childList: true, characterData: true });
    }`);

    // One file of the two: only that one is saved.
    const one = await saveOne(page, item.getByRole("button", { name: "Download data.bin" }));
    expect(one.name).toBe("data.bin");
    await statusSays(page, "Saved data.bin (6.0 MB), decrypted and verified", item);
    expect((await one.bytes).equals(data)).toBe(true);
    const seen = (await page.evaluate("window.seen")) as string[];
    expect(seen.some((text) => /^Decrypting data\.bin: [\d.]+ (bytes|KB|MB) of 6\.0 MB/.test(text))).toBe(
      true,
    );
    await item.getByText("downloaded once of 3").waitFor();

    // Download all: both files, within the same counted download (its links still live).
    const saves: Promise<void>[] = [];
    const names: string[] = [];
    const collect = (download: import("playwright-core").Download) => {
      names.push(download.suggestedFilename());
      saves.push(download.saveAs(join(work.path, `all-${download.suggestedFilename()}`)));
    };
    page.on("download", collect);
    await item.getByRole("button", { name: "Download all" }).click();
    await statusSays(page, "Saved 2 files", item);
    page.off("download", collect);
    await Promise.all(saves);
    expect(names.sort()).toEqual(["data.bin", "notes.txt"]);
    expect(readFileSync(join(work.path, "all-notes.txt")).equals(notes)).toBe(true);
    expect(readFileSync(join(work.path, "all-data.bin")).equals(data)).toBe(true);
    expect(await statusTexts.textContent()).toContain("(6.1 MB)");
    await item.getByText("downloaded once of 3").waitFor();
    await snap(page, "inbox-files");

    // Delete asks first; Cancel keeps the transfer, the dialog's own button deletes it.
    await item.getByRole("button", { name: "Delete" }).click();
    const dialog = page.getByRole("dialog", { name: "Delete this transfer?" });
    await dialog.waitFor();
    await snap(page, "confirm-delete");
    await dialog.getByRole("button", { name: "Cancel" }).click();
    await dialog.waitFor({ state: "detached" });
    expect(await item.count()).toBe(1);
    await item.getByRole("button", { name: "Delete" }).click();
    await dialog.getByRole("button", { name: "Delete transfer" }).click();
    await item.waitFor({ state: "detached" });
    await expect(agent.transfer(two.id)).rejects.toThrow(/not found/i);

    // What the person sent, with its download count; deleted the same way.
    await page.getByRole("link", { name: "Sent" }).click();
    const sent = page.locator(`[data-transfer="${transferId}"]`);
    await sent.getByText("downloaded once of").waitFor();
    expect(await sent.textContent()).toContain("To report-bot");
    expect(await sent.textContent()).toContain("contract.pdf");
    await snap(page, "sent");
    await sent.getByRole("button", { name: "Delete" }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Delete transfer" }).click();
    await sent.waitFor({ state: "detached" });
    await page.getByText("Nothing sent yet").waitFor();

    // A new API key is copied with one click; revoking it asks first.
    await page.getByRole("link", { name: "Settings" }).click();
    await page.getByLabel("Name of a new key").fill("ci runner");
    await page.getByRole("button", { name: "Create API key" }).click();
    const issued = (await page.locator("code.secret").textContent({ timeout: 30_000 })) ?? "";
    await page.getByRole("button", { name: "Copy key" }).click();
    await page.getByRole("button", { name: "Copied" }).waitFor();
    expect(await page.evaluate("navigator.clipboard.readText()")).toBe(issued);
    await snapPart(
      page.locator("section", { has: page.getByRole("heading", { name: "API keys" }) }),
      "api-key-copy",
    );
    await page.getByRole("button", { name: "Revoke ci runner" }).click();
    const revoke = page.getByRole("dialog", { name: "Revoke the key “ci runner”?" });
    await revoke.getByRole("button", { name: "Revoke key" }).click();
    await page.getByRole("cell", { name: "ci runner", exact: true }).waitFor({ state: "detached" });
    const refused = await fetch(`${baseUrl}/v1/api-keys`, { headers: { authorization: `Bearer ${issued}` } });
    expect(refused.status).toBe(401);

    // Removing a connection asks too.
    await page.getByLabel("E-mail of an account to connect with").fill(agentAccountEmail);
    await page.getByRole("button", { name: "Send invitation" }).click();
    await page.getByRole("button", { name: "Withdraw" }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Withdraw" }).click();
    await page.getByText("No connections yet").waitFor();

    // A new login password, given the current one.
    const loginSection = page.locator("section", {
      has: page.getByRole("heading", { name: "Login password" }),
    });
    await loginSection.getByLabel("Current login password").fill(LOGIN_PASSWORD);
    await loginSection.getByLabel("New login password").fill(NEW_LOGIN_PASSWORD);
    await loginSection.getByLabel("Repeat the new password").fill(NEW_LOGIN_PASSWORD);
    await snapPart(loginSection, "change-password");
    await loginSection.getByRole("button", { name: "Change login password" }).click();
    await statusSays(page, "Login password changed", loginSection);

    // Forgot it anyway: the reset link from the e-mail sets another and ends every session.
    await page.getByRole("button", { name: "Log out" }).click();
    await page.getByRole("link", { name: "Forgot your password?" }).click();
    await page.getByLabel("E-mail address").fill(PERSON);
    await page.getByRole("button", { name: "Send reset link" }).click();
    await statusSays(page, "an e-mail with a link is on its way");
    await snap(page, "forgot-password");
    await page.goto(await linkInMail("password-reset", PERSON, "/reset-password"));
    expect(page.url()).toBe(`${baseUrl}/reset-password`);
    await page.getByLabel("New login password").fill(RESET_LOGIN_PASSWORD);
    await page.getByLabel("Repeat the new password").fill(RESET_LOGIN_PASSWORD);
    await snap(page, "reset-password");
    await page.getByRole("button", { name: "Set new password" }).click();
    await statusSays(page, "every session was logged out");
    await page.getByRole("link", { name: "Log in" }).last().click();
    await page.getByLabel("E-mail address").fill(PERSON);
    await page.getByLabel("Password").fill(NEW_LOGIN_PASSWORD);
    await page.getByRole("button", { name: "Log in" }).click();
    await page.locator('main .status[data-kind="error"]', { hasText: "wrong e-mail or password" }).waitFor();
    await page.getByLabel("Password").fill(RESET_LOGIN_PASSWORD);
    await page.getByRole("button", { name: "Log in" }).click();
    await until(page, page.getByRole("heading", { name: "Unlock your files" }));

    // Someone whose confirmation e-mail went missing asks for a new link.
    const latecomer = "lee@example.com";
    const signup = await t.call("POST", "/v1/auth/signup", {
      body: { email: latecomer, password: LOGIN_PASSWORD },
    });
    expect(signup.statusCode).toBe(201);
    await page.goto(`${baseUrl}/resend-verification`);
    await page.getByLabel("E-mail address").fill(latecomer);
    await page.getByRole("button", { name: "Send a new link" }).click();
    await statusSays(page, "an e-mail with a link is on its way");
    await snap(page, "resend-verification");
    await page.goto(await linkInMail("verify", latecomer, "/verify", 2));
    await statusSays(page, "lee@example.com is confirmed");

    // A page that does not exist: a page saying so, with status 404; the API keeps its JSON.
    const missing = await page.goto(`${baseUrl}${MISSING_PAGE}`);
    expect(missing?.status()).toBe(404);
    await page.getByRole("heading", { name: "Page not found" }).waitFor();
    await snap(page, "not-found");
    const api404 = await fetch(`${baseUrl}/v1/no-such-route`, { headers: { accept: "text/html" } });
    expect(api404.status).toBe(404);
    expect(((await api404.json()) as { error: { code: string } }).error.code).toBe("NOT_FOUND");

    expect(consoleErrors).toEqual([]);
  });

  it("shows each of the person's agents with its webhook endpoint, status and recent deliveries", async () => {
    receiver = await startReceiver();
    // The second message is refused: the page shows it retrying, and the agent as failing.
    receiver.answer = (_request, index) => ({ status: index === 0 ? 200 : 500 });
    const login = await t.call("POST", "/v1/auth/login", {
      body: { email: PERSON, password: RESET_LOGIN_PASSWORD },
    });
    const session = login.json().token as string;
    // A name that is markup, in the URL too: the page must show it as text.
    const endpoint = `${receiver.url}?who=<b>dana</b>`;
    const registered = await t.call("POST", "/v1/agents/register", {
      key: session,
      body: {
        agent_id: "dana-bot",
        name: "Dana's bot",
        public_key: randomPublicKey(),
        webhook_url: endpoint,
      },
    });
    expect(registered.statusCode).toBe(201);
    const agentUuid = registered.json().id as string;
    const quiet = await t.call("POST", "/v1/agents/register", {
      key: session,
      body: { agent_id: "quiet-bot", name: "Quiet bot", public_key: randomPublicKey() },
    });
    expect(quiet.statusCode).toBe(201);
    const test = async () =>
      (await t.call("POST", `/v1/agents/${agentUuid}/webhook-test`, { key: session })).json()
        .message_id as string;
    const delivered = await test();
    await waitUntil(() => receiver.received.length === 1, "the first test message arrives");
    const refused = await test();
    await waitUntil(() => receiver.received.length === 2, "the second test message arrives");

    await page.getByRole("link", { name: "Settings" }).click();
    const section = page.locator("section", { has: page.getByRole("heading", { name: "Agents' webhooks" }) });
    const card = section.locator('[data-agent="dana-bot"]');
    await until(page, card.locator(`[data-message="${refused}"]`, { hasText: "HTTP 500" }));
    expect(await card.locator(".endpoint").textContent()).toBe(endpoint);
    expect(await section.locator("b").count()).toBe(0);
    expect(await card.locator(".badge").textContent()).toBe("Failing");
    const rows = card.getByRole("row");
    expect(await rows.nth(0).textContent()).toBe("TimeMessageAttemptsResult");
    // Newest first: the refused test message, then the delivered one.
    expect(await rows.nth(1).getAttribute("data-message")).toBe(refused);
    expect(await rows.nth(1).locator("td").allTextContents()).toEqual([
      expect.any(String),
      "webhook.test",
      "1",
      expect.stringMatching(/^Retrying \(HTTP 500\) · next try /),
    ]);
    expect(await rows.nth(2).getAttribute("data-message")).toBe(delivered);
    expect(await rows.nth(2).locator("td").allTextContents()).toEqual([
      expect.any(String),
      "webhook.test",
      "1",
      "Delivered (HTTP 200)",
    ]);
    const quietCard = section.locator('[data-agent="quiet-bot"]');
    expect(await quietCard.locator(".badge").textContent()).toBe("No webhook");
    await quietCard.getByText("No webhook: this agent polls for its files.").waitFor();
    await snapPart(section, "settings-webhooks");

    expect(consoleErrors).toEqual([]);
  });

  it("shows a received folder as a tree that folds, and saves one file or all of them, byte-identical", async () => {
    // A folder with nested folders, and a file whose name is markup: it must stay text.
    const root = join(work.path, "project");
    const files: Record<string, Buffer> = {
      "README.md": Buffer.from("# Project\n"),
      "docs/guide.txt": Buffer.concat([Buffer.from("guide\n"), randomBytes(40_000)]),
      "docs/img/logo.png": randomBytes(120_000),
      "src/main.ts": Buffer.from("console.log('hi');\n"),
      "<img src=x onerror=alert(1)>.txt": Buffer.from("not markup\n"),
    };
    for (const [name, bytes] of Object.entries(files)) {
      mkdirSync(join(root, name, ".."), { recursive: true });
      writeFileSync(join(root, name), bytes);
    }
    const folder = await agent.send({ to: PERSON, paths: [root] });
    expect(folder.status).toBe("active");

    await page.goto(`${baseUrl}/inbox`);
    await page.getByLabel("Receiving password").fill(RECEIVING_PASSWORD);
    await page.getByRole("button", { name: "Unlock" }).click();
    await until(page, page.getByText("Unlocked in this tab"));
    const item = page.locator(`[data-transfer="${folder.id}"]`);
    const tree = item.getByRole("list", { name: "Files and folders" });
    await tree.waitFor();

    // The tree as a person reads it: each row indented by its depth, folders first, by name.
    const outline = () =>
      page.evaluate(`[...document.querySelectorAll('[data-transfer="${folder.id}"] .tree li')]
        .filter((li) => li.checkVisibility())
        .map((li) => {
          let depth = 0;
          for (let up = li.parentElement; up; up = up.parentElement) if (up.matches(".tree li")) depth++;
          const row = li.querySelector(":scope > details > summary") ?? li;
          return "  ".repeat(depth) + [...row.querySelectorAll(":scope > .name, :scope > .size")]
            .map((part) => part.textContent).join(" ");
        })`);
    expect(await outline()).toEqual([
      "project/ 5 files, 156 KB",
      "  docs/ 2 files, 156 KB",
      "    img/ 1 file, 117 KB",
      "      logo.png 117 KB",
      "    guide.txt 39 KB",
      "  src/ 1 file, 19 bytes",
      "    main.ts 19 bytes",
      "  <img src=x onerror=alert(1)>.txt 11 bytes",
      "  README.md 10 bytes",
    ]);
    expect(await item.locator("img").count()).toBe(0);
    await snap(page, "inbox-folder");

    // Folders fold: closing docs/ hides what is in it, opening it shows it again.
    const docs = tree.locator("summary", { hasText: "docs/" });
    await docs.click();
    await item.getByText("guide.txt").waitFor({ state: "hidden" });
    expect(await outline()).toEqual([
      "project/ 5 files, 156 KB",
      "  docs/ 2 files, 156 KB",
      "  src/ 1 file, 19 bytes",
      "    main.ts 19 bytes",
      "  <img src=x onerror=alert(1)>.txt 11 bytes",
      "  README.md 10 bytes",
    ]);
    await docs.click();
    await item.getByText("guide.txt").waitFor();

    // One file: saved under its path, folders joined by "_" (a download makes no folders).
    const guide = await saveOne(page, item.getByRole("button", { name: "Download project/docs/guide.txt" }));
    expect(guide.name).toBe("project_docs_guide.txt");
    await statusSays(page, "Saved project/docs/guide.txt", item);
    expect((await guide.bytes).equals(files["docs/guide.txt"] as Buffer)).toBe(true);

    // All of them: every file, each with its own bytes.
    const saved = new Map<string, Promise<Buffer>>();
    const collect = (download: import("playwright-core").Download) => {
      const to = join(work.path, `folder-${saved.size}`);
      saved.set(
        download.suggestedFilename(),
        download.saveAs(to).then(() => readFileSync(to)),
      );
    };
    page.on("download", collect);
    await item.getByRole("button", { name: "Download all" }).click();
    await statusSays(page, "Saved 5 files", item);
    page.off("download", collect);
    // Saved under the path with "_" for "/"; Chromium itself turns the name's < and > into "_".
    const savedAs: Record<string, string> = {
      "README.md": "project_README.md",
      "docs/guide.txt": "project_docs_guide.txt",
      "docs/img/logo.png": "project_docs_img_logo.png",
      "src/main.ts": "project_src_main.ts",
      "<img src=x onerror=alert(1)>.txt": "project__img src=x onerror=alert(1)_.txt",
    };
    expect([...saved.keys()].sort()).toEqual(Object.values(savedAs).sort());
    for (const [name, bytes] of Object.entries(files))
      expect((await saved.get(savedAs[name] as string))?.equals(bytes), name).toBe(true);

    expect(consoleErrors).toEqual([]);
  });

  it("keeps the list an unlock drew, even when an older draw of it answers later", async () => {
    const file = join(work.path, "late-draw.txt");
    writeFileSync(file, "drawn once\n");
    const sent = await agent.send({ to: PERSON, paths: [file] });
    await page.goto(`${baseUrl}/inbox`);
    await until(page, page.getByRole("heading", { name: "Unlock your files" }));

    // A Refresh while locked asks for the list; its answer is held back until after the unlock.
    const held = await holdNextListRequest(page);
    await page.getByRole("button", { name: "Refresh" }).click();
    await waitUntil(() => held.request() !== null, "the Refresh's request for the list");

    await page.getByLabel("Receiving password").fill(RECEIVING_PASSWORD);
    await page.getByRole("button", { name: "Unlock" }).click();
    await until(page, page.getByText("Unlocked in this tab"));
    const download = page
      .locator(`[data-transfer="${sent.id}"]`)
      .getByRole("button", { name: "Download", exact: true });
    await waitUntil(() => download.isEnabled(), "the unlocked list's Download button");

    // The older draw's answer arrives last: drawn over the unlocked list, its buttons would be disabled.
    await held.release();
    await page.evaluate(() => new Promise((resolve) => setTimeout(resolve, 300)));
    expect(await download.isEnabled()).toBe(true);
    expect(consoleErrors).toEqual([]);
  });

  it("resumes a large upload after a reload from the server's offset, once the same file is chosen again", async () => {
    // 12 MiB: past RESUMABLE_FROM (8 MiB on the wire), so the send goes presigned through tus.
    const big = randomBytes(12 * 1024 * 1024);
    const bigPath = join(work.path, "dataset.bin");
    writeFileSync(bigPath, big);
    const impostorDir = join(work.path, "other");
    mkdirSync(impostorDir, { recursive: true });
    writeFileSync(join(impostorDir, "dataset.bin"), big.subarray(0, big.length - 1));

    // Every PATCH the server gets, with its offset and size; the second is held until the reload.
    const { patches, holding, release } = await interceptPatches(page, 2);

    await page.getByRole("link", { name: "Send" }).click();
    await page.getByLabel("Agent", { exact: true }).fill("report-bot");
    await page.getByLabel("Files").setInputFiles(bigPath);
    await page.getByRole("button", { name: "Encrypt and send" }).click();
    await holding;
    // The first 4 MiB are on the server; the progress line says bytes of the total, speed, time left.
    await uploadingLine(page, "12 MB").waitFor();
    const shown = Number(
      await page.getByRole("progressbar", { name: "Send progress" }).getAttribute("value"),
    );
    expect(shown).toBeGreaterThanOrEqual(4 * 1024 * 1024);

    // The page reloads mid-upload: it remembers the upload and asks for the file again.
    await page.reload();
    release();
    const card = page.locator("section.unfinished");
    await card
      .getByText("Unfinished upload: dataset.bin (12 MB) to report-bot — choose the same file to resume.")
      .waitFor();
    await snapPart(card, "send-resume");

    // Another file of that name is refused: it is not the one begun.
    await card.getByLabel("The same file").setInputFiles(join(impostorDir, "dataset.bin"));
    await card
      .locator('.status[data-kind="error"]', { hasText: "choose the same file: dataset.bin" })
      .waitFor();
    expect(patches).toHaveLength(1);

    // The same file: the upload goes on from the server's offset, not from zero.
    await card.getByLabel("The same file").setInputFiles(bigPath);
    // (The refusal above is still on the status line until the resumed upload reports.)
    await card
      .locator('.status[data-kind="ok"]', { hasText: "Sent dataset.bin to report-bot, end-to-end encrypted" })
      .waitFor({ timeout: 60_000 });
    const sentText = (await card.locator('.status[data-kind="ok"]').textContent()) ?? "";
    const resumedId = /transfer (tr_\w+)/.exec(sentText)?.[1] as string;
    await page.unroute("**/v1/uploads/**");
    const wire = big.length + 24 + 16 * Math.ceil(big.length / 65536);
    // The first PATCH after the reload starts where the server stood (about 4 MiB), not at 0.
    expect(patches[0]?.offset).toBe(0);
    expect(patches[0]?.bytes).toBeGreaterThanOrEqual(4 * 1024 * 1024);
    expect(patches[1]?.offset).toBe(patches[0]?.bytes);
    const received = patches.reduce((sum, p) => sum + p.bytes, 0);
    expect(received).toBe(wire);
    expect(received).toBeLessThan(2 * big.length);

    // Confirmed, and the agent decrypts the very bytes chosen.
    const out = join(work.path, "agent-big");
    const got = await agent.receive(resumedId, { outDir: out });
    expect(got.files.map((file) => file.name)).toEqual(["dataset.bin"]);
    expect(readFileSync(join(out, "dataset.bin")).equals(big)).toBe(true);
    // Nothing is left to resume, after a reload too.
    await page.reload();
    await page.getByRole("heading", { name: "Send a file to an agent" }).waitFor();
    expect(await page.locator("section.unfinished").count()).toBe(0);

    // An upload cut before its first PATCH got through can be discarded: asked first, then deleted.
    const cut = await interceptPatches(page, 1);
    await page.getByLabel("Agent", { exact: true }).fill("report-bot");
    await page.getByLabel("Files").setInputFiles(bigPath);
    await page.getByRole("button", { name: "Encrypt and send" }).click();
    await cut.holding;
    await page.reload();
    cut.release();
    const left = page.locator("section.unfinished");
    const abandoned = (await left.getAttribute("data-upload")) as string;
    await left.getByRole("button", { name: "Discard" }).click();
    await page
      .getByRole("dialog", { name: "Discard this upload?" })
      .getByRole("button", { name: "Discard upload" })
      .click();
    await left.waitFor({ state: "detached" });
    const gone = await t.call("GET", `/v1/transfers/${abandoned}`, {
      key: (
        await t.call("POST", "/v1/auth/login", { body: { email: PERSON, password: RESET_LOGIN_PASSWORD } })
      ).json().token,
    });
    expect(gone.statusCode).toBe(404);
    await page.unroute("**/v1/uploads/**");

    expect(consoleErrors).toEqual([]);
  });
});
