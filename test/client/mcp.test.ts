import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { HandoffClient } from "@handoff/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PYTHON_TOOLS_FILE } from "../../scripts/contract-documents.js";
import { McpSession } from "./mcp-session.js";
import {
  clientAccount,
  filesUnder,
  handoff,
  type ListeningServer,
  nestedFolder,
  publishBroadcast,
  ROOT,
  startListeningServer,
  tempDir,
  writeTree,
} from "./support.js";

/** An ELF header: a native executable by its bytes (decisions 5.6). */
const ELF = Buffer.concat([Buffer.from([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1, 0]), randomBytes(2048)]);

describe("handoff mcp over stdio, with the MCP SDK's client, against a running server", () => {
  const work = tempDir("handoff-mcp-");
  const downloads = join(work.path, "downloads");
  let server: ListeningServer;
  const requests: string[] = [];
  let env: Record<string, string>;
  let sender: McpSession;
  let receiver: McpSession;
  const slugs = { sender: `mcp-sender-${randomBytes(3).toString("hex")}`, receiver: "" };
  slugs.receiver = `mcp-receiver-${randomBytes(3).toString("hex")}`;
  const URGENT = "Maintenance window tonight";

  function file(name: string, content: Buffer | string): string {
    const dir = join(work.path, `files-${randomBytes(4).toString("hex")}`);
    mkdirSync(dir);
    writeFileSync(join(dir, name), content);
    return join(dir, name);
  }

  beforeAll(async () => {
    server = await startListeningServer({}, { requests });
    ({ env } = await clientAccount(server));
    for (const slug of Object.values(slugs)) {
      const run = await handoff(
        ["identity", "new", "--agent", slug, "--out", join(work.path, `${slug}.json`)],
        env,
      );
      if (run.status !== 0) throw new Error(run.stderr);
    }
    await publishBroadcast(server, URGENT, "critical");
    await publishBroadcast(server, "Just so you know", "info");
    [sender, receiver] = await Promise.all([
      McpSession.start(["--identity", join(work.path, `${slugs.sender}.json`)], env),
      McpSession.start(
        [
          "--identity",
          join(work.path, `${slugs.receiver}.json`),
          "--shield",
          "strict",
          "--downloads",
          downloads,
        ],
        env,
      ),
    ]);
  });
  afterAll(async () => {
    await sender?.close();
    await receiver?.close();
    await server?.close();
    work.remove();
  });

  it("announces each urgent broadcast and the unread count on stderr and as logging messages", async () => {
    await receiver.waitFor(() => receiver.logs.length >= 2, "logging messages");
    const lines = receiver.stderr.trim().split("\n");
    expect(lines).toEqual([`urgent broadcast (critical): ${URGENT}`, "unread: 0 transfers, 2 broadcasts"]);
    expect(receiver.logs).toEqual([
      { level: "critical", logger: "handoff", data: `urgent broadcast (critical): ${URGENT}` },
      { level: "info", logger: "handoff", data: "unread: 0 transfers, 2 broadcasts" },
    ]);
  });

  it("announces each transfer that arrives while it serves, from the inbox's event stream, as a logging message", async () => {
    const transfer = await sender.ok<{ id: string; total_size: number }>("send_file", {
      to: slugs.receiver,
      paths: [file("announced.txt", "arrived")],
    });
    const text = `new transfer ${transfer.id} from ${slugs.sender}: 1 file, ${transfer.total_size} bytes (download_transfer fetches it)`;
    await receiver.waitFor(() => receiver.logs.some((log) => log.data === text), "the arrival announced");
    expect(receiver.logs.filter((log) => log.data === text)).toEqual([
      { level: "info", logger: "handoff", data: text },
    ]);
    expect(receiver.stderr).toContain(text);
    expect(requests.some((line) => line.startsWith("GET /v1/transfers/inbox/events"))).toBe(true);
    // The sender is told of nothing: the transfer is not in its inbox.
    expect(sender.logs.some((log) => String(log.data).includes(transfer.id))).toBe(false);
  });

  it("offers exactly the five tools of decisions 5.5 and request_file of 10.5", async () => {
    const { tools } = await sender.client.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual(
      [
        "check_inbox",
        "download_transfer",
        "get_profile",
        "list_connections",
        "request_file",
        "send_file",
      ].sort(),
    );
  });

  it("request_file returns a link a person with no account answers; the agent is told and downloads the file byte-exact", async () => {
    const link = await receiver.ok<{
      url: string;
      agent: string;
      title: string;
      max_files: number;
      status: string;
    }>("request_file", {
      title: "Your signed contract",
      message: "PDF please",
      max_files: 2,
      expires_in: "1h",
    });
    expect(link).toMatchObject({
      agent: slugs.receiver,
      title: "Your signed contract",
      max_files: 2,
      status: "active",
    });
    expect(link.url).toMatch(new RegExp(`^${server.baseUrl}/r/hrq_[A-Za-z0-9_-]{32}$`));

    const contract = Buffer.from(`%PDF-1.7\n${randomBytes(40_000).toString("base64")}\n%%EOF\n`);
    const stranger = new HandoffClient({ baseUrl: "http://127.0.0.1:9", apiKey: "" });
    const sent = await stranger.sendToRequest({
      link: link.url,
      paths: [file("contract.pdf", contract)],
      senderName: "Ada",
    });
    const told = `new transfer ${sent.transfer_id} from Ada (request link, unverified): 1 file`;
    await receiver.waitFor(
      () => receiver.logs.some((log) => String(log.data).startsWith(told)),
      "the link's transfer announced",
    );

    const outDir = join(work.path, "requested");
    const result = await receiver.ok<{ files: { name: string; path: string }[] }>("download_transfer", {
      transfer_id: sent.transfer_id,
      out_dir: outDir,
    });
    expect(result.files.map((f) => f.name)).toEqual(["contract.pdf"]);
    expect(readFileSync(join(outDir, "contract.pdf")).equals(contract)).toBe(true);
  });

  it("describes every tool to a model: its answer's schema, each parameter, its hints and what a call uses up", async () => {
    const { tools } = await sender.client.listTools();
    const byName = new Map(tools.map((tool) => [tool.name, tool]));
    for (const tool of tools) {
      expect(tool.outputSchema?.type, tool.name).toBe("object");
      expect(Object.keys(tool.outputSchema?.properties ?? {}).length, tool.name).toBeGreaterThan(0);
      for (const [name, parameter] of Object.entries(tool.inputSchema.properties ?? {})) {
        expect((parameter as { description?: string }).description, `${tool.name}.${name}`).toMatch(/\w/);
      }
      expect(Object.keys(tool.annotations ?? {}).sort(), tool.name).toEqual(
        ["destructiveHint", "openWorldHint", "readOnlyHint"].sort(),
      );
      expect(tool.description, tool.name).toMatch(/Uses up/);
    }
    const expiresIn = byName.get("send_file")?.inputSchema.properties?.expires_in as { enum?: string[] };
    expect(expiresIn.enum).toEqual(["1h", "12h", "24h", "7d", "14d", "30d", "90d"]);
    expect(byName.get("download_transfer")?.description).toContain("Uses up one of the transfer's downloads");
    expect(byName.get("download_transfer")?.annotations).toEqual({
      readOnlyHint: false,
      destructiveHint: true,
      openWorldHint: true,
    });
    for (const reader of ["check_inbox", "list_connections", "get_profile"]) {
      expect(byName.get(reader)?.annotations, reader).toMatchObject({
        readOnlyHint: true,
        destructiveHint: false,
      });
    }
    expect(byName.get("send_file")?.annotations).toMatchObject({
      readOnlyHint: false,
      destructiveHint: false,
    });
  });

  it("lists exactly the tools the Python package's handoff.tools describes itself with", async () => {
    const { tools } = await sender.client.listTools();
    expect(JSON.parse(readFileSync(join(ROOT, PYTHON_TOOLS_FILE), "utf8")), "run npm run contract").toEqual(
      tools,
    );
  });

  it("sends a file between two agents, lists it in the inbox and downloads it decrypted and scanned", async () => {
    const bytes = randomBytes(150_000);
    const transfer = await sender.ok<{ id: string; mode: string; is_encrypted: boolean; recipient: string }>(
      "send_file",
      { to: slugs.receiver, paths: [file("data.bin", bytes)], message: "from the MCP", max_downloads: 2 },
    );
    expect(transfer).toMatchObject({ mode: "agent-to-agent", is_encrypted: true, recipient: slugs.receiver });

    const inbox = await receiver.ok<{ transfers: { id: string }[] }>("check_inbox", { wait_seconds: 0 });
    expect(inbox.transfers.map((t) => t.id)).toContain(transfer.id);

    const outDir = join(work.path, "fresh", "nested");
    const result = await receiver.ok("download_transfer", { transfer_id: transfer.id, out_dir: outDir });
    expect(result).toEqual({
      transfer_id: transfer.id,
      files: [
        {
          name: "data.bin",
          path: join(outDir, "data.bin"),
          size: bytes.length,
          shield: { level: "strict", verdict: "clean", findings: [] },
        },
      ],
    });
    expect(readFileSync(join(outDir, "data.bin")).equals(bytes)).toBe(true);
  });

  it("sends a folder given by its absolute path, and downloads it as the same tree", async () => {
    const tree = nestedFolder("reports");
    const parent = writeTree(join(work.path, "tree"), tree);
    const transfer = await sender.ok<{ id: string; files: { name: string }[] }>("send_file", {
      to: slugs.receiver,
      paths: [join(parent, "reports")],
    });
    expect(transfer.files.map((f) => f.name).sort()).toEqual(Object.keys(tree).sort());

    const outDir = join(work.path, "tree-out");
    const result = await receiver.ok<{ files: { name: string; path: string }[] }>("download_transfer", {
      transfer_id: transfer.id,
      out_dir: outDir,
    });
    expect(result.files.map((f) => f.path).sort()).toEqual(
      Object.keys(tree)
        .map((name) => join(outDir, name))
        .sort(),
    );
    expect(filesUnder(outDir)).toEqual(Object.keys(tree).sort());
    for (const [name, bytes] of Object.entries(tree))
      expect(readFileSync(join(outDir, name)).equals(bytes)).toBe(true);
  });

  it("downloads into --downloads by default, and leaves out a file Shield blocked", async () => {
    const good = randomBytes(500);
    const transfer = await sender.ok<{ id: string }>("send_file", {
      to: slugs.receiver,
      paths: [file("slides.pdf", ELF), file("notes.bin", good)],
    });
    const result = await receiver.ok<{
      files: { name: string; path?: string; shield: { verdict: string } }[];
    }>("download_transfer", { transfer_id: transfer.id });
    const blocked = result.files.find((f) => f.name === "slides.pdf");
    expect(blocked?.shield.verdict).toBe("blocked");
    expect(blocked && "path" in blocked).toBe(false);
    expect(result.files.find((f) => f.name === "notes.bin")?.path).toBe(join(downloads, "notes.bin"));
    expect(filesUnder(downloads)).toEqual(["notes.bin"]);
  });

  it("answers a bad transfer id with an isError result of one sentence, and keeps serving", async () => {
    const result = await receiver.call("download_transfer", { transfer_id: "tr_nosuchtransfer" });
    expect(result.isError).toBe(true);
    const text = result.content[0]?.type === "text" ? result.content[0].text : "";
    expect(text).toContain("NOT_FOUND");
    expect(text).not.toContain("\n");
    expect(existsSync(join(downloads, "tr_nosuchtransfer"))).toBe(false);

    const profile = await receiver.ok<{ agent: { agent_id: string } }>("get_profile");
    expect(profile.agent.agent_id).toBe(slugs.receiver);
  });

  it("refuses a relative path as an error result", async () => {
    const result = await sender.call("send_file", { to: slugs.receiver, paths: ["relative.txt"] });
    expect(result.isError).toBe(true);
    const text = result.content[0]?.type === "text" ? result.content[0].text : "";
    expect(text).toContain("absolute");
  });

  it("sends to an e-mail address as agent-to-human", async () => {
    const transfer = await sender.ok<{ mode: string; recipient: string }>("send_file", {
      to: "someone.new@example.com",
      paths: [file("for-a-person.txt", "hello")],
    });
    expect(transfer).toMatchObject({ mode: "agent-to-human", recipient: "someone.new@example.com" });
  });

  it("lists connections and sendable agents, and reads the startup profile", async () => {
    const listed = await sender.ok<{ connections: unknown; sendable: unknown }>("list_connections");
    expect(Object.keys(listed).sort()).toEqual(["connections", "sendable"]);
    expect(JSON.stringify(listed.sendable)).toContain(slugs.receiver);

    const profile = await sender.ok<{
      agent: { agent_id: string };
      broadcasts: { urgent: { title: string }[] };
    }>("get_profile");
    expect(profile.agent.agent_id).toBe(slugs.sender);
    expect(profile.broadcasts.urgent.map((b) => b.title)).toContain(URGENT);
  });

  it("wrote nothing but protocol messages to stdout", () => {
    expect(sender.protocolErrors).toEqual([]);
    expect(receiver.protocolErrors).toEqual([]);
  });
});
