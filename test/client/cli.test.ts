import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { HandoffClient, loadIdentity } from "@handoff/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PLAIN_WARNING } from "../../src/client/commands/send.js";
import {
  blobsOfSize,
  captured,
  clientAccount,
  eventually,
  filesUnder,
  handoff,
  handoffInTerminal,
  type ListeningServer,
  nestedFolder,
  startHandoff,
  startListeningServer,
  tempDir,
  writeTree,
} from "./support.js";

/** An ELF header: a native executable by its bytes, whatever its name says (decisions 5.6). */
const ELF = Buffer.concat([Buffer.from([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1, 0]), randomBytes(4096)]);

describe("handoff client commands against a running server", () => {
  let server: ListeningServer;
  let env: Record<string, string>;
  const work = tempDir("handoff-cli-");
  let count = 0;

  /** A file of the given content under the work folder. */
  function file(name: string, content: Buffer | string): string {
    const dir = join(work.path, `files-${++count}`);
    mkdirSync(dir);
    writeFileSync(join(dir, name), content);
    return join(dir, name);
  }

  /** `handoff identity new` for a fresh slug; answers the identity file and the slug. */
  async function newIdentity(prefix: string): Promise<{ path: string; slug: string }> {
    const slug = `${prefix}-${randomBytes(3).toString("hex")}`;
    const path = join(work.path, `${slug}.json`);
    const run = await handoff(["identity", "new", "--agent", slug, "--out", path], env);
    expect(run.stderr).toBe("");
    expect(run.status).toBe(0);
    return { path, slug };
  }

  async function sendFiles(from: string, to: string, paths: string[], extra: string[] = []) {
    const run = await handoff(["send", "--identity", from, "--to", to, ...extra, ...paths], env);
    expect(run.stderr).toBe("");
    expect(run.status).toBe(0);
    return JSON.parse(run.stdout) as {
      id: string;
      is_encrypted: boolean;
      files: { name: string; size: number }[];
    };
  }

  const outDir = () => join(work.path, `out-${++count}`);

  beforeAll(async () => {
    server = await startListeningServer();
    ({ env } = await clientAccount(server));
  });
  afterAll(async () => {
    await server?.close();
    work.remove();
  });

  describe("identity new", () => {
    it("writes both key pairs to a 0600 file in the exact JSON of 5.5 and registers the agent with both public keys", async () => {
      const slug = `ident-${randomBytes(3).toString("hex")}`;
      const path = join(work.path, `${slug}.json`);
      const run = await handoff(["identity", "new", "--agent", slug, "--out", path, "--name", "Ident"], env);
      expect(run.status).toBe(0);
      expect(statSync(path).mode & 0o777).toBe(0o600);
      const saved = JSON.parse(readFileSync(path, "utf8"));
      expect(Object.keys(saved).sort()).toEqual(
        [
          "agent_id",
          "ed25519_private_key",
          "ed25519_public_key",
          "x25519_private_key",
          "x25519_public_key",
        ].sort(),
      );
      expect(saved.agent_id).toBe(slug);
      for (const key of [
        "ed25519_private_key",
        "ed25519_public_key",
        "x25519_private_key",
        "x25519_public_key",
      ])
        expect(Buffer.from(saved[key], "base64")).toHaveLength(32);

      const answer = JSON.parse(run.stdout);
      expect(answer).toMatchObject({ file: path, agent_id: slug, agent: { agent_id: slug, name: "Ident" } });
      const resolved = await server.call("GET", `/v1/agents/resolve?agent_id=${slug}`, {
        key: env.HANDOFF_API_KEY,
      });
      expect(resolved.json()).toMatchObject({
        public_key: saved.x25519_public_key,
        signing_public_key: saved.ed25519_public_key,
        connection_status: "connected",
      });
    });

    it("refuses to overwrite an existing file and leaves it as it was", async () => {
      const path = file("taken.json", "precious");
      const run = await handoff(["identity", "new", "--agent", "overwrite-me", "--out", path], env);
      expect(run.status).toBe(1);
      expect(run.stderr.trim().split("\n")).toHaveLength(1);
      expect(run.stderr).toContain("already exists");
      expect(readFileSync(path, "utf8")).toBe("precious");
    });

    it("with --no-register needs no API key and registers nothing", async () => {
      const path = join(work.path, "offline.json");
      const run = await handoff(
        ["identity", "new", "--agent", "offline-agent", "--out", path, "--no-register"],
        {},
      );
      expect(run.status).toBe(0);
      expect(JSON.parse(run.stdout)).toMatchObject({ agent_id: "offline-agent", agent: null });
      const resolved = await server.call("GET", "/v1/agents/resolve?agent_id=offline-agent", {
        key: env.HANDOFF_API_KEY,
      });
      expect(resolved.statusCode).toBe(404);
    });

    it("removes the file again when registration fails, so a retry starts clean", async () => {
      const { slug } = await newIdentity("twice");
      const path = join(work.path, "second-try.json");
      const run = await handoff(["identity", "new", "--agent", slug, "--out", path], env);
      expect(run.status).toBe(1);
      expect(run.stderr).toContain("AGENT_ID_TAKEN");
      expect(existsSync(path)).toBe(false);
    });
  });

  describe("send and receive", () => {
    let alice: { path: string; slug: string };
    let bob: { path: string; slug: string };
    beforeAll(async () => {
      alice = await newIdentity("alice");
      bob = await newIdentity("bob");
    });

    it("round-trips files byte for byte, encrypted, with pure JSON on stdout and nothing on a non-terminal stderr", async () => {
      const contents = {
        "empty.txt": Buffer.alloc(0),
        "one.bin": randomBytes(1),
        "records.bin": randomBytes(3 * 65536 + 17),
      };
      const paths = Object.entries(contents).map(([name, bytes]) => file(name, bytes));
      const transfer = await sendFiles(alice.path, bob.slug, paths, ["--message", "hello bob"]);
      expect(transfer.is_encrypted).toBe(true);
      // 5.3: 24 + size + 16 per record is what the server stores.
      expect(transfer.files.map((f) => f.size)).toEqual([24 + 16, 24 + 1 + 16, 24 + 3 * 65536 + 17 + 4 * 16]);

      const dir = outDir();
      const run = await handoff(["receive", transfer.id, "--identity", bob.path, "--out", dir], env);
      expect(run.stderr).toBe("");
      expect(run.status).toBe(0);
      const result = JSON.parse(run.stdout);
      expect(result.transfer_id).toBe(transfer.id);
      expect(result.files).toHaveLength(3);
      for (const received of result.files) {
        const expected = contents[received.name as keyof typeof contents];
        expect(Object.keys(received)).toEqual(["name", "path", "size", "shield"]);
        expect(received.path).toBe(join(dir, received.name));
        expect(received.size).toBe(expected.length);
        expect(received.shield).toMatchObject({ level: "standard", verdict: "clean", findings: [] });
        expect(readFileSync(received.path).equals(expected)).toBe(true);
      }
      expect(filesUnder(dir)).toEqual(Object.keys(contents).sort());
    });

    it("sends a folder as a folder (7.3): receive recreates its tree, hidden files included, inside --out", async () => {
      const tree = nestedFolder("project");
      const parent = writeTree(join(work.path, `tree-${++count}`), tree);
      const transfer = await sendFiles(alice.path, bob.slug, [join(parent, "project")]);
      expect(transfer.files.map((f) => f.name).sort()).toEqual(Object.keys(tree).sort());

      const dir = outDir();
      const run = await handoff(["receive", transfer.id, "--identity", bob.path, "--out", dir], env);
      expect(run.stderr).toBe("");
      expect(run.status).toBe(0);
      expect(filesUnder(dir)).toEqual(Object.keys(tree).sort());
      for (const [name, bytes] of Object.entries(tree))
        expect(readFileSync(join(dir, name)).equals(bytes)).toBe(true);
    });

    it("draws a progress bar per file on stderr when stderr is a terminal, with its speed and time left", async () => {
      const bytes = randomBytes(4 * 1024 * 1024);
      const run = await handoffInTerminal(
        ["send", "--identity", alice.path, "--to", bob.slug, file("progress.bin", bytes)],
        env,
      );
      expect(run.status).toBe(0);
      expect(run.stdout).toMatch(/progress\.bin \[[█░]+\] 100% 4\.0\/4\.0 MiB \d+\.\d MiB\/s 0:00 left/);
    });

    it("sends unencrypted with --plain, saying so on stderr, and receive still writes the bytes", async () => {
      const bytes = randomBytes(70_000);
      const sent = await handoff(
        ["send", "--identity", alice.path, "--to", bob.slug, "--plain", file("plain.bin", bytes)],
        env,
      );
      expect(sent.status).toBe(0);
      expect(sent.stderr).toBe(`${PLAIN_WARNING}\n`);
      const transfer = JSON.parse(sent.stdout) as {
        id: string;
        is_encrypted: boolean;
        files: { size: number }[];
      };
      expect(transfer.is_encrypted).toBe(false);
      expect(transfer.files[0]?.size).toBe(bytes.length);
      const dir = outDir();
      const run = await handoff(["receive", transfer.id, "--identity", bob.path, "--out", dir], env);
      expect(run.status).toBe(0);
      expect(readFileSync(join(dir, "plain.bin")).equals(bytes)).toBe(true);
    });

    it("passes --max-downloads and --expires-in to the transfer", async () => {
      const transfer = await sendFiles(
        alice.path,
        bob.slug,
        [file("a.txt", "a")],
        ["--max-downloads", "3", "--expires-in", "1h"],
      );
      expect(transfer).toMatchObject({ max_downloads: 3 });
      const ttl = Date.parse((transfer as unknown as { expires_at: string }).expires_at) - Date.now();
      expect(ttl).toBeLessThanOrEqual(3600_000);
      expect(ttl).toBeGreaterThan(3000_000);
    });

    it("refuses an --expires-in the contract does not offer before anything is sent", async () => {
      const run = await handoff(
        ["send", "--identity", alice.path, "--to", bob.slug, "--expires-in", "2h", file("never.txt", "x")],
        env,
      );
      expect(run.status).toBe(1);
      expect(run.stderr).toBe(
        "--expires-in must be one of 1h, 12h, 24h, 7d, 14d, 30d, 90d (handoff help lists the commands)\n",
      );
    });

    it("fails on an unknown transfer with one stderr line, exit 1, and no folder made", async () => {
      const dir = outDir();
      const run = await handoff(["receive", "tr_doesnotexist", "--identity", bob.path, "--out", dir], env);
      expect(run.status).toBe(1);
      expect(run.stdout).toBe("");
      expect(run.stderr.trim().split("\n")).toHaveLength(1);
      expect(run.stderr).toContain("NOT_FOUND");
      expect(existsSync(dir)).toBe(false);
    });

    it("refuses a transfer whose stored bytes were tampered with and writes nothing", async () => {
      const bytes = randomBytes(2 * 65536 + 5);
      const transfer = await sendFiles(alice.path, bob.slug, [file("tampered.bin", bytes)]);
      const encryptedSize = transfer.files[0]?.size ?? 0;
      const [blob] = blobsOfSize(server.blobsDir, encryptedSize);
      if (!blob) throw new Error("stored blob not found");
      const stored = readFileSync(blob);
      const secondRecord = 24 + 65536 + 16 + 3;
      stored[secondRecord] = (stored[secondRecord] ?? 0) ^ 0x01;
      writeFileSync(blob, stored);

      const dir = outDir();
      mkdirSync(dir);
      const run = await handoff(["receive", transfer.id, "--identity", bob.path, "--out", dir], env);
      expect(run.status).toBe(1);
      expect(run.stdout).toBe("");
      expect(run.stderr.trim().split("\n")).toHaveLength(1);
      expect(filesUnder(dir)).toEqual([]);
    });

    it("refuses a transfer wrapped to another agent's key and writes nothing", async () => {
      const carol = await newIdentity("carol");
      const transfer = await sendFiles(alice.path, bob.slug, [file("for-bob.txt", "only bob")]);
      const dir = outDir();
      mkdirSync(dir);
      const run = await handoff(["receive", transfer.id, "--identity", carol.path, "--out", dir], env);
      expect(run.status).toBe(1);
      expect(run.stderr.trim().split("\n")).toHaveLength(1);
      expect(filesUnder(dir)).toEqual([]);
    });

    it("refuses an unknown --shield level before downloading anything", async () => {
      const transfer = await sendFiles(alice.path, bob.slug, [file("b.txt", "b")]);
      const run = await handoff(["receive", transfer.id, "--identity", bob.path, "--shield", "maximum"], env);
      expect(run.status).toBe(1);
      expect(run.stderr).toContain("--shield");
      const after = await server.call("GET", `/v1/transfers/${transfer.id}`, { key: env.HANDOFF_API_KEY });
      expect(after.json().downloads).toBe(0);
    });

    it("names a missing API key in one line", async () => {
      const run = await handoff(["inbox", "--identity", bob.path], {
        HANDOFF_URL: env.HANDOFF_URL as string,
      });
      expect(run.status).toBe(1);
      expect(run.stderr.trim()).toBe("HANDOFF_API_KEY is not set: give the API key of the agent's account");
    });

    it("lists the agent's inbox as JSON", async () => {
      const transfer = await sendFiles(alice.path, bob.slug, [file("inbox.txt", "for the inbox")]);
      const run = await handoff(["inbox", "--identity", bob.path, "--wait", "0"], env);
      expect(run.status).toBe(0);
      const answer = JSON.parse(run.stdout);
      expect(Object.keys(answer)).toEqual(["transfers"]);
      expect(answer.transfers.map((t: { id: string }) => t.id)).toContain(transfer.id);
      const aliceInbox = JSON.parse((await handoff(["inbox", "--identity", alice.path], env)).stdout);
      expect(aliceInbox.transfers.map((t: { id: string }) => t.id)).not.toContain(transfer.id);
    });
  });

  describe("SDK and CLI interoperate", () => {
    it("the SDK sends and the CLI receives; the CLI sends and the SDK receives", async () => {
      const sdkSide = await newIdentity("sdk-side");
      const cliSide = await newIdentity("cli-side");
      const sdk = new HandoffClient({
        baseUrl: server.baseUrl,
        apiKey: env.HANDOFF_API_KEY as string,
        identity: await loadIdentity(sdkSide.path),
      });

      const fromSdk = randomBytes(100_000);
      const sent = await sdk.send({ to: cliSide.slug, paths: [file("from-sdk.bin", fromSdk)] });
      const dir = outDir();
      const run = await handoff(["receive", sent.id, "--identity", cliSide.path, "--out", dir], env);
      expect(run.status).toBe(0);
      expect(readFileSync(join(dir, "from-sdk.bin")).equals(fromSdk)).toBe(true);

      const fromCli = randomBytes(100_000);
      const transfer = await sendFiles(cliSide.path, sdkSide.slug, [file("from-cli.bin", fromCli)]);
      const sdkDir = outDir();
      const received = await sdk.receive(transfer.id, { outDir: sdkDir });
      expect(received.files[0]?.name).toBe("from-cli.bin");
      expect(readFileSync(join(sdkDir, "from-cli.bin")).equals(fromCli)).toBe(true);
    });
  });

  describe("Shield", () => {
    it("receive blocks an executable named .pdf: exit 3, the JSON still printed, one stderr line, the file not written", async () => {
      const sender = await newIdentity("shield-sender");
      const receiver = await newIdentity("shield-receiver");
      const good = randomBytes(1000);
      const transfer = await sendFiles(sender.path, receiver.slug, [
        file("invoice.pdf", ELF),
        file("good.bin", good),
      ]);
      const dir = outDir();
      const run = await handoff(["receive", transfer.id, "--identity", receiver.path, "--out", dir], env);
      expect(run.status).toBe(3);
      const lines = run.stderr.trim().split("\n");
      expect(lines).toHaveLength(1);
      expect(lines[0]).toContain("invoice.pdf");
      expect(lines[0]).not.toContain("good.bin");
      const result = JSON.parse(run.stdout);
      const blocked = result.files.find((f: { name: string }) => f.name === "invoice.pdf");
      expect(blocked.path).toBeUndefined();
      expect(blocked.shield.verdict).toBe("blocked");
      expect(blocked.shield.findings.map((f: { kind: string }) => f.kind)).toContain("disguised_executable");
      expect(filesUnder(dir)).toEqual(["good.bin"]);
      expect(readFileSync(join(dir, "good.bin")).equals(good)).toBe(true);
    });

    it("--shield off writes the same file unscanned and exits 0", async () => {
      const sender = await newIdentity("off-sender");
      const receiver = await newIdentity("off-receiver");
      const transfer = await sendFiles(sender.path, receiver.slug, [file("invoice.pdf", ELF)]);
      const dir = outDir();
      const run = await handoff(
        ["receive", transfer.id, "--identity", receiver.path, "--out", dir, "--shield", "off"],
        env,
      );
      expect(run.status).toBe(0);
      expect(JSON.parse(run.stdout).files[0].shield).toEqual({
        level: "off",
        verdict: "unscanned",
        findings: [],
      });
      expect(readFileSync(join(dir, "invoice.pdf")).equals(ELF)).toBe(true);
    });
  });

  describe("listen", () => {
    it("receives each transfer as it arrives, reports blocked files on stderr, and stops on SIGTERM", async () => {
      const sender = await newIdentity("listen-sender");
      const listener = await newIdentity("listener");
      const dir = outDir();
      const child = startHandoff(["listen", "--identity", listener.path, "--out", dir], env);
      const output = captured(child);
      const until = (ready: () => boolean, what: string) =>
        eventually(ready, what, () => `exit ${child.exitCode}, stderr: ${output.stderr}`);
      try {
        await until(() => output.stderr.includes("listening"), "listen start");
        const bytes = randomBytes(80_000);
        const first = await sendFiles(sender.path, listener.slug, [file("first.bin", bytes)]);
        await until(() => output.stdout.includes(first.id), "first transfer received");
        expect(readFileSync(join(dir, "first.bin")).equals(bytes)).toBe(true);

        const second = await sendFiles(sender.path, listener.slug, [file("report.pdf", ELF)]);
        await until(() => output.stdout.includes(second.id), "second transfer received");
        await until(() => output.stderr.includes("report.pdf"), "blocked line");
        expect(existsSync(join(dir, "report.pdf"))).toBe(false);

        const lines = output.stdout
          .trim()
          .split("\n")
          .map((line) => JSON.parse(line));
        expect(lines.map((line) => line.transfer_id)).toEqual([first.id, second.id]);
      } finally {
        const exited = once(child, "exit");
        child.kill("SIGTERM");
        const [code] = await exited;
        expect(code).toBe(0);
      }
    });
  });
});
