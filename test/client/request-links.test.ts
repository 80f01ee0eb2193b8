import { randomBytes } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createIdentity, HandoffClient, HandoffError, parseRequestLink } from "@handoff/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  blobsOfSize,
  clientAccount,
  type ListeningServer,
  nestedFolder,
  startListeningServer,
  tempDir,
  writeTree,
} from "./support.js";

let server: ListeningServer;
const work = tempDir();
beforeAll(async () => {
  server = await startListeningServer();
});
afterAll(async () => {
  await server.close();
  work.remove();
});

/** The agent "inbox" of a fresh account, as its SDK client sees it (identity registered). */
async function receivingAgent() {
  const account = await clientAccount(server);
  const identity = createIdentity(`inbox-${randomBytes(3).toString("hex")}`);
  const owner = new HandoffClient({ baseUrl: server.baseUrl, apiKey: account.apiKey, identity });
  await owner.registerAgent(identity, { name: "Invoice inbox" });
  return { owner, identity };
}

/** Someone with no account: a client with no API key, which a request link needs none of. */
const stranger = () => new HandoffClient({ baseUrl: "http://127.0.0.1:9", apiKey: "" });

describe("SDK: request links (decisions 10)", () => {
  it("a person with no account sends a folder through the link; the agent receives it byte-exact, stored as ciphertext", async () => {
    const { owner, identity } = await receivingAgent();
    const link = await owner.createRequest({ title: "Your export", maxFiles: 20 });
    expect(link.agent).toBe(identity.agentId);
    expect(link.url).toBe(`${server.baseUrl}/r/${link.token}`);

    const tree = nestedFolder("export");
    const root = writeTree(join(work.path, "sender"), tree);
    // A size no file of the folder has, so its stored copy is the one blob of its encrypted size.
    const single = randomBytes(70_001);
    const singlePath = join(work.path, "single.bin");
    writeFileSync(singlePath, single);

    const sent = await stranger().sendToRequest({
      link: link.url,
      paths: [join(root, "export"), singlePath],
      senderName: "Ada",
      senderEmail: "ada@example.com",
    });
    expect(sent.status).toBe("active");

    // The server holds ciphertext: no stored file is the plaintext, each is 24 + size + 16 × records.
    const stored = blobsOfSize(server.blobsDir, 24 + single.length + 16 * 2);
    expect(stored.length).toBe(1);
    expect(readFileSync(stored[0] as string).includes(single.subarray(0, 64))).toBe(false);

    const [item] = (await owner.inbox()).transfers.filter((t) => t.id === sent.transfer_id);
    expect(item).toMatchObject({
      mode: "request",
      request_id: link.id,
      sender: { kind: "link", name: "Ada", email: "ada@example.com", verified: false },
    });

    const out = join(work.path, "received");
    const received = await owner.receive(sent.transfer_id, { outDir: out });
    expect(received.files.length).toBe(Object.keys(tree).length + 1);
    for (const [name, bytes] of Object.entries(tree)) {
      expect(readFileSync(join(out, name)).equals(bytes), name).toBe(true);
    }
    expect(readFileSync(join(out, "single.bin")).equals(single)).toBe(true);

    // One use of one: the link is used up.
    const [listed] = (await owner.listRequests()).filter((r) => r.id === link.id);
    expect(listed).toMatchObject({ uses: 1, status: "used" });
  });

  it("a revoked link refuses the send before any file is read (410 REQUEST_CLOSED)", async () => {
    const { owner } = await receivingAgent();
    const link = await owner.createRequest({ title: "Closed soon" });
    expect((await owner.revokeRequest(link.id)).status).toBe("revoked");
    const path = join(work.path, "late.bin");
    writeFileSync(path, randomBytes(10));
    await expect(stranger().sendToRequest({ link: link.url, paths: [path] })).rejects.toMatchObject({
      status: 410,
      code: "REQUEST_CLOSED",
    });
  });

  it("parseRequestLink takes the link's page and nothing else", () => {
    const token = `hrq_${"A".repeat(32)}`;
    expect(parseRequestLink(`https://handoff.example/r/${token}`)).toEqual({
      baseUrl: "https://handoff.example",
      token,
    });
    expect(parseRequestLink(`https://example.org/handoff/r/${token}/`)).toEqual({
      baseUrl: "https://example.org/handoff",
      token,
    });
    for (const bad of ["not a url", `ftp://x/r/${token}`, "https://x/r/hrq_short", `https://x/t/${token}`]) {
      expect(() => parseRequestLink(bad)).toThrow(HandoffError);
    }
  });
});
