import { randomBytes } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rewritingProxy, swapLinkKey } from "./rewriting-proxy.js";
import {
  clientAccount,
  filesUnder,
  handoff,
  type ListeningServer,
  nestedFolder,
  startListeningServer,
  tempDir,
  writeTree,
} from "./support.js";

/** A name a hostile sender types: a terminal title sequence, a bidi override and markup. */
const HOSTILE_NAME = 'Ada\u001b]0;pwned\u0007\u202e<script>alert("x")</script>';

describe("handoff request create|list|revoke and send --to-request (decisions 10.5)", () => {
  const work = tempDir("handoff-request-cli-");
  let server: ListeningServer;
  let env: Record<string, string>;
  let apiKey: string;
  const agent = `inbox-${randomBytes(3).toString("hex")}`;
  const identity = join(work.path, `${agent}.json`);
  /** Someone with no account: no API key in their environment. */
  let stranger: Record<string, string>;

  const cli = async (args: string[], as = env) => {
    const run = await handoff(args, as);
    expect(run.status, run.stderr).toBe(0);
    return run.stdout;
  };

  async function inboxSize(): Promise<number> {
    const res = await server.call("GET", "/v1/transfers?direction=received", { key: apiKey });
    return res.json().total as number;
  }

  beforeAll(async () => {
    server = await startListeningServer();
    ({ env, apiKey } = await clientAccount(server));
    stranger = { HANDOFF_URL: "http://127.0.0.1:9" };
    await cli(["identity", "new", "--agent", agent, "--out", identity]);
  });
  afterAll(async () => {
    await server?.close();
    work.remove();
  });

  it("creates a link, a person with no account sends a folder and a file through it, the agent's CLI receives them byte-exact", async () => {
    const url = (
      await cli([
        "request",
        "create",
        "--identity",
        identity,
        "--title",
        "Your export",
        "--max-files",
        "20",
        "--max-size",
        "50MiB",
        "--uses",
        "2",
        "--ask-name",
        "--ask-email",
      ])
    ).trim();
    expect(url).toMatch(new RegExp(`^${server.baseUrl}/r/hrq_[A-Za-z0-9_-]{32}$`));
    const [listed] = JSON.parse(await cli(["request", "list", "--json"])).requests;
    expect(listed).toMatchObject({
      agent,
      title: "Your export",
      max_files: 20,
      max_total_size: 50 * 2 ** 20,
      max_uses: 2,
      uses: 0,
      status: "active",
    });

    const tree = nestedFolder("export");
    const root = writeTree(join(work.path, "sender"), tree);
    const single = join(work.path, "invoice.pdf");
    const invoice = randomBytes(100_000);
    writeFileSync(single, invoice);
    const sent = JSON.parse(
      await cli(
        [
          "send",
          "--to-request",
          url,
          "--sender-name",
          HOSTILE_NAME,
          "--sender-email",
          "ada@example.com",
          join(root, "export"),
          single,
        ],
        stranger,
      ),
    ) as { transfer_id: string; status: string };
    expect(sent.status).toBe("active");

    // The sender is what they typed, shown as text and as unverified.
    const table = await cli(["transfers", "list", "--direction", "received"]);
    expect(table).toContain("(request link, unverified)");
    expect(table).not.toContain("\u001b");
    expect(table).not.toContain("\u202e");
    expect(table).toContain('Ada\\u001b]0;pwned\\u0007\\u202e<script>alert("x")</script>');

    const out = join(work.path, "received");
    await cli(["receive", sent.transfer_id, "--identity", identity, "--out", out]);
    expect(filesUnder(out)).toEqual([...Object.keys(tree), "invoice.pdf"].sort());
    for (const [name, bytes] of Object.entries(tree))
      expect(readFileSync(join(out, name)).equals(bytes)).toBe(true);
    expect(readFileSync(join(out, "invoice.pdf")).equals(invoice)).toBe(true);

    const rows = (await cli(["request", "list"])).trim().split("\n");
    expect(rows[0]).toMatch(/^ID\s+AGENT\s+STATUS\s+USES\s+EXPIRES\s+TITLE$/);
    expect(rows[1]).toContain("1/2");
    // Seven CLI processes, each starting from the TypeScript sources: slow on a loaded machine.
  }, 240_000);

  it("revoke closes the link: the next send exits 1 naming REQUEST_CLOSED and sends nothing", async () => {
    const { id, url } = JSON.parse(
      await cli(["request", "create", "--identity", identity, "--title", "Soon closed", "--json"]),
    ) as { id: string; url: string };
    const refusedWithoutYes = await handoff(["request", "revoke", id], env);
    expect(refusedWithoutYes.status).not.toBe(0);
    expect(JSON.parse(await cli(["request", "revoke", id, "--yes"])).status).toBe("revoked");
    const before = await inboxSize();
    const path = join(work.path, "late.txt");
    writeFileSync(path, "too late");
    const late = await handoff(["send", "--to-request", url, path], stranger);
    expect(late.status).toBe(1);
    expect(late.stderr).toContain("REQUEST_CLOSED");
    expect(await inboxSize()).toBe(before);
  });

  it("refuses a link whose key the server swapped, before a byte is encrypted: exit 5, nothing sent", async () => {
    const url = (await cli(["request", "create", "--identity", identity, "--title", "Swapped"])).trim();
    const proxy = await rewritingProxy(server.baseUrl, swapLinkKey);
    try {
      const before = await inboxSize();
      const path = join(work.path, "secret.txt");
      writeFileSync(path, "secret");
      const swapped = url.replace(server.baseUrl, proxy.url);
      const run = await handoff(["send", "--to-request", swapped, path], stranger);
      expect(run.status).toBe(5);
      expect(run.stderr).toContain(`agent '${agent}'`);
      expect(run.stderr).toContain("transparency log");
      expect(run.stdout).toBe("");
      expect(await inboxSize()).toBe(before);
    } finally {
      await proxy.close();
    }
  });

  it("refuses what a link does not take before asking the server: options of an agent send, a bad size", async () => {
    const link = `${server.baseUrl}/r/hrq_${"A".repeat(32)}`;
    const plain = await handoff(["send", "--to-request", link, "--plain", "x"], stranger);
    expect(plain.status).toBe(1);
    expect(plain.stderr).toContain("--to-request takes only");
    const size = await handoff(
      ["request", "create", "--identity", identity, "--title", "T", "--max-size", "lots"],
      env,
    );
    expect(size.status).toBe(1);
    expect(size.stderr).toContain("--max-size");
    const notALink = await handoff(["send", "--to-request", "https://example.org/x", "x"], stranger);
    expect(notALink.status).toBe(1);
    expect(notALink.stderr).toContain("not a request link");
  });
});
