import { randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { checkpointBody, signNote } from "@handoff/sdk/transparency";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { McpSession } from "./mcp-session.js";
import { closeServer, type RewritingProxy, rewritingProxy } from "./rewriting-proxy.js";
import { clientAccount, handoff, type ListeningServer, startListeningServer, tempDir } from "./support.js";

/**
 * A proxy in front of the server that, like a compromised operator, answers `resolve` for `victim`
 * with another public key (and leaves the rest of the answer, its key_proof included, alone).
 */
function keySwappingProxy(target: string, victim: string): Promise<RewritingProxy> {
  return rewritingProxy(target, (path, body) =>
    path.startsWith(`/v1/agents/resolve?agent_id=${victim}`)
      ? { ...body, public_key: randomBytes(32).toString("base64") }
      : null,
  );
}

describe("custody in the Node clients: key transparency, receipts, log verify and witness (decisions 9)", () => {
  const work = tempDir("handoff-custody-");
  let server: ListeningServer;
  let env: Record<string, string>;
  let apiKey: string;
  const alice = `alice-${randomBytes(3).toString("hex")}`;
  const bob = `bob-${randomBytes(3).toString("hex")}`;
  const identity = (slug: string) => join(work.path, `${slug}.json`);
  let count = 0;

  function file(content: string): string {
    const dir = join(work.path, `files-${++count}`);
    mkdirSync(dir);
    writeFileSync(join(dir, "report.txt"), content);
    return join(dir, "report.txt");
  }

  async function transfersOnServer(): Promise<number> {
    const res = await server.call("GET", "/v1/transfers?direction=sent", { key: apiKey });
    return res.json().total as number;
  }

  beforeAll(async () => {
    server = await startListeningServer();
    ({ env, apiKey } = await clientAccount(server));
    for (const slug of [alice, bob]) {
      const run = await handoff(["identity", "new", "--agent", slug, "--out", identity(slug)], env);
      if (run.status !== 0) throw new Error(run.stderr);
    }
  });
  afterAll(async () => {
    await server?.close();
    work.remove();
  });

  it("sends after checking the recipient's key against the log, and the recipient posts a signed receipt", async () => {
    const sent = await handoff(["send", "--identity", identity(alice), "--to", bob, file("q3 figures")], env);
    expect(sent.stderr).toBe("");
    expect(sent.status).toBe(0);
    const transfer = JSON.parse(sent.stdout) as { id: string };
    const pinned = JSON.parse(readFileSync(join(work.path, `${alice}.log.json`), "utf8"));
    expect(pinned.vkey).toBe((await server.call("GET", "/v1/log/key")).json().vkey);
    expect(pinned.checkpoint).toMatch(/^127\.0\.0\.1:\d+\/handoff\n\d+\n/);

    const received = await handoff(
      ["receive", transfer.id, "--identity", identity(bob), "--out", join(work.path, "in-1")],
      env,
    );
    expect(received.status, received.stderr).toBe(0);
    const receipts = await server.call("GET", `/v1/transfers/${transfer.id}/receipts`, { key: apiKey });
    expect(receipts.json().receipts).toHaveLength(1);
    expect(receipts.json().receipts[0].receipt).toMatchObject({
      transfer_id: transfer.id,
      shield: { level: "standard" },
    });
  });

  it("posts no receipt with --no-receipt", async () => {
    const sent = await handoff(["send", "--identity", identity(alice), "--to", bob, file("no receipt")], env);
    const transfer = JSON.parse(sent.stdout) as { id: string };
    const received = await handoff(
      ["receive", transfer.id, "--identity", identity(bob), "--out", join(work.path, "in-2"), "--no-receipt"],
      env,
    );
    expect(received.status, received.stderr).toBe(0);
    const receipts = await server.call("GET", `/v1/transfers/${transfer.id}/receipts`, { key: apiKey });
    expect(receipts.json().receipts).toEqual([]);
  });

  it("refuses a recipient key the server swapped, before a byte is encrypted: the CLI exits 5 and the MCP tool fails", async () => {
    const proxy = await keySwappingProxy(server.baseUrl, bob);
    try {
      const before = await transfersOnServer();
      const swapped = { ...env, HANDOFF_URL: proxy.url };
      const run = await handoff(
        ["send", "--identity", identity(alice), "--to", bob, file("secret")],
        swapped,
      );
      expect(run.status).toBe(5);
      expect(run.stderr).toContain(`agent '${bob}'`);
      expect(run.stderr).toContain("transparency log");
      expect(run.stdout).toBe("");

      const mcp = await McpSession.start(["--identity", identity(alice)], swapped);
      try {
        const result = await mcp.call("send_file", { to: bob, paths: [file("secret too")] });
        expect(result.isError).toBe(true);
        const text = result.content[0]?.type === "text" ? result.content[0].text : "";
        expect(text).toContain("KEY_NOT_IN_LOG");
      } finally {
        await mcp.close();
      }
      expect(await transfersOnServer()).toBe(before);
    } finally {
      await proxy.close();
    }
  });

  it("verifies the account's audit export offline, and names the line of an edited entry", async () => {
    const res = await server.call("GET", "/v1/audit/export", { key: apiKey });
    const good = join(work.path, "audit.ndjson");
    writeFileSync(good, res.body);
    const vkey = (await server.call("GET", "/v1/log/key")).json().vkey as string;
    const verified = await handoff(["log", "verify", good, "--vkey", vkey], env);
    expect(verified.status, verified.stderr).toBe(0);
    const report = JSON.parse(verified.stdout);
    expect(report).toMatchObject({ ok: true, receipts: { verified: 1, unverifiable: 0 } });
    expect(report.entries).toBe(res.body.trim().split("\n").length - 1);

    const lines = res.body.trim().split("\n");
    const edited = JSON.parse(lines[3] as string);
    edited.entry.at = "2020-01-01T00:00:00.000Z";
    lines[3] = JSON.stringify(edited);
    const bad = join(work.path, "edited.ndjson");
    writeFileSync(bad, `${lines.join("\n")}\n`);
    const refused = await handoff(["log", "verify", bad, "--identity", identity(alice)], env);
    expect(refused.status).toBe(5);
    expect(JSON.parse(refused.stdout)).toMatchObject({ ok: false, problem: { line: 4 } });
  });

  it("witnesses the log: consistent checkpoints are kept, a forked one is caught (exit 5)", async () => {
    const state = join(work.path, "witness");
    const first = await handoff(["log", "witness", "--state", state], env);
    expect(first.status, first.stderr).toBe(0);
    await handoff(["send", "--identity", identity(alice), "--to", bob, file("more")], env);
    // The new transfer's events reach a checkpoint within about a second.
    let later = first;
    for (let attempt = 0; attempt < 40; attempt++) {
      later = await handoff(["log", "witness", "--state", state], env);
      expect(later.status, later.stderr).toBe(0);
      if (JSON.parse(later.stdout).size > JSON.parse(first.stdout).size) break;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    expect(JSON.parse(later.stdout).size).toBeGreaterThan(JSON.parse(first.stdout).size);

    // A server that signs, with the real log key, a tree of the same size with another root.
    const seed = Buffer.from(
      readFileSync(join(server.service.config.dataDir, "log.key"), "utf8").trim(),
      "base64",
    );
    const kept = JSON.parse(later.stdout) as { origin: string; size: number };
    const fork = checkpointBody({ origin: kept.origin, size: kept.size + 1, root: randomBytes(32) });
    const forked = createServer((incoming, outgoing) => {
      if (incoming.url?.startsWith("/v1/log/checkpoint")) outgoing.end(signNote(fork, kept.origin, seed));
      else if (incoming.url?.startsWith("/v1/log/proof/consistency")) {
        outgoing.setHeader("content-type", "application/json");
        outgoing.end(
          JSON.stringify({ from: kept.size, to: kept.size + 1, proof: [randomBytes(32).toString("base64")] }),
        );
      } else outgoing.writeHead(404).end();
    });
    await new Promise<void>((resolve) => forked.listen(0, "127.0.0.1", resolve));
    try {
      const url = `http://127.0.0.1:${(forked.address() as AddressInfo).port}`;
      const caught = await handoff(["log", "witness", "--state", state], { ...env, HANDOFF_URL: url });
      expect(caught.status).toBe(5);
      expect(caught.stderr).toContain("LOG_FORKED");
    } finally {
      await closeServer(forked);
    }
  });
});
