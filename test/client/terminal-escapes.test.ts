import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { terminalSafe } from "../../src/client/terminal-text.js";
import {
  CLI,
  captured,
  clientAccount,
  eventually,
  handoff,
  handoffInTerminal,
  type ListeningServer,
  ROOT,
  startListeningServer,
  tempDir,
} from "./support.js";

/** Sets the window title, rings the bell and clears the screen, then looks like a report. */
const HOSTILE = "\u001b]0;TITLE\u0007\u001b[2Jreport.txt";
/**
 * What a hostile sender can still put in a name that the server and every client accept
 * (decisions 7.3 refuses only C0/C1 controls and backslashes): a right-to-left override, which
 * shows "report\u202efdp.txt" as "reporttxt.pdf" on a terminal.
 */
const SPOOFED = "report\u202efdp.txt";
const SPOOFED_ESCAPED = "report\\u202efdp.txt";
/** An ELF header under a .txt name: Shield blocks it, so the name is printed with the refusal. */
const ELF = Buffer.concat([Buffer.from([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1, 0]), randomBytes(4096)]);
const ESCAPED = "\\u001b]0;TITLE\\u0007\\u001b[2Jreport.txt";

/** Whether the override reached the terminal raw. */
const rawSpoof = (text: string) => text.includes("\u202e");

describe("terminal-safe output", () => {
  it("escapes controls, C1 controls and bidirectional overrides, and nothing else", () => {
    expect(terminalSafe(HOSTILE)).toBe(ESCAPED);
    expect(terminalSafe("a\u009b31mb\u202ecod.exe\nnext\ttab")).toBe(
      "a\\u009b31mb\\u202ecod.exe\\u000anext\\u0009tab",
    );
    expect(terminalSafe("line one\nline two", { keepNewlines: true })).toBe("line one\nline two");
    expect(terminalSafe("naïve 文件 ✓.pdf")).toBe("naïve 文件 ✓.pdf");
  });
});

/**
 * Issue 20, point 6: a hostile sender's file name reaches `handoff receive` and `handoff listen`
 * on a terminal (a pseudo-terminal from util-linux `script`): their lines show the escape
 * sequences as text and never hand them to the terminal.
 */
describe("hostile file names on a terminal", () => {
  let server: ListeningServer;
  let env: Record<string, string>;
  const work = tempDir("handoff-terminal-");
  let sender = "";
  let receiver = { path: "", slug: "" };

  async function identity(prefix: string) {
    const slug = `${prefix}-${randomBytes(3).toString("hex")}`;
    const path = join(work.path, `${slug}.json`);
    const run = await handoff(["identity", "new", "--agent", slug, "--out", path], env);
    expect(run.status, run.stderr).toBe(0);
    return { path, slug };
  }

  async function sendHostile(): Promise<string> {
    const dir = join(work.path, `files-${randomBytes(3).toString("hex")}`);
    mkdirSync(dir);
    writeFileSync(join(dir, SPOOFED), ELF);
    const run = await handoff(["send", "--identity", sender, "--to", receiver.slug, join(dir, SPOOFED)], env);
    expect(run.status, run.stderr).toBe(0);
    return JSON.parse(run.stdout).id;
  }

  beforeAll(async () => {
    server = await startListeningServer();
    ({ env } = await clientAccount(server));
    sender = (await identity("hostile-sender")).path;
    receiver = await identity("terminal-user");
  }, 300_000);
  afterAll(async () => {
    await server?.close();
    work.remove();
  });

  it("receive prints the blocked name escaped", async () => {
    const id = await sendHostile();
    const out = join(work.path, "received");
    const run = await handoffInTerminal(["receive", id, "--identity", receiver.path, "--out", out], env);
    expect(run.status).toBe(3);
    expect(run.stdout).toContain(`Shield blocked ${SPOOFED_ESCAPED}`);
    expect(rawSpoof(run.stdout + run.stderr)).toBe(false);
  }, 120_000);

  it("listen prints the blocked name escaped", async () => {
    const quote = (word: string) => `'${word.replaceAll("'", `'\\''`)}'`;
    const out = join(work.path, "listened");
    const command = [...CLI, "listen", "--identity", receiver.path, "--out", out].map(quote).join(" ");
    const child = spawn("script", ["--quiet", "--command", command, "/dev/null"], {
      cwd: ROOT,
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
    });
    const output = captured(child);
    try {
      await eventually(
        () => output.stdout.includes("listening"),
        "listen start",
        () => output.stdout,
      );
      const id = await sendHostile();
      await eventually(
        () => output.stdout.includes(`${id}: Shield blocked`),
        "the blocked line",
        () => output.stdout,
      );
      expect(output.stdout).toContain(`Shield blocked ${SPOOFED_ESCAPED}`);
      expect(rawSpoof(output.stdout + output.stderr)).toBe(false);
    } finally {
      if (child.pid && child.exitCode === null) process.kill(-child.pid, "SIGTERM");
    }
  }, 120_000);
});
