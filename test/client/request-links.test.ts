import { randomBytes } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  createIdentity,
  HandoffClient,
  HandoffCustodyError,
  HandoffError,
  parseRequestLink,
} from "@handoff/sdk";
import {
  checkpointBody,
  entryLeafHash,
  inclusionProof,
  type KeyProof,
  leavesSource,
  openCheckpoint,
  parseVerifierKey,
  signNote,
  treeRoot,
} from "@handoff/sdk/transparency";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LINK_ANSWER, rewritingProxy, swapLinkKey } from "./rewriting-proxy.js";
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
  return { owner, identity, apiKey: account.apiKey };
}

/**
 * A proof of `real`'s leaf in a tree of `size` leaves (the leaf, then random ones) that is not the
 * log's, signed with the log's own key: what a server showing one client a forked log would answer.
 */
async function forkedProof(
  real: KeyProof,
  origin: string,
  size: number,
  seed: Uint8Array,
): Promise<KeyProof> {
  const leaves = Array.from({ length: size }, (_, i) =>
    i === real.leaf_index ? entryLeafHash(real.entry) : new Uint8Array(randomBytes(32)),
  );
  const tree = leavesSource(leaves);
  const root = await treeRoot(tree, size);
  return {
    ...real,
    tree_size: size,
    checkpoint: signNote(checkpointBody({ origin, size, root }), origin, seed),
    inclusion: (await inclusionProof(tree, real.leaf_index, size)).map((hash) =>
      Buffer.from(hash).toString("base64"),
    ),
  };
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

  it("refuses a link whose key the log does not back, before a byte is encrypted (KEY_NOT_IN_LOG)", async () => {
    const { owner } = await receivingAgent();
    const link = await owner.createRequest({ title: "Swapped" });
    const proxy = await rewritingProxy(server.baseUrl, swapLinkKey);
    try {
      const path = join(work.path, "for-the-swapped.bin");
      writeFileSync(path, randomBytes(10));
      const refused = stranger().sendToRequest({ link: `${proxy.url}/r/${link.token}`, paths: [path] });
      await expect(refused).rejects.toBeInstanceOf(HandoffCustodyError);
      await expect(refused).rejects.toMatchObject({ code: "KEY_NOT_IN_LOG" });
      await expect(refused).rejects.toThrow(`agent '${link.agent}'`);
      expect(await owner.inbox()).toMatchObject({ transfers: [] });
      expect((await owner.listRequests())[0]).toMatchObject({ uses: 0, status: "active" });
    } finally {
      await proxy.close();
    }
  });

  it("refuses a link whose checkpoint forks the one its client saw before (LOG_FORKED)", async () => {
    const { owner, identity, apiKey } = await receivingAgent();
    let seen: KeyProof | null = null;
    let forged: KeyProof | null = null;
    const proxy = await rewritingProxy(server.baseUrl, (path, body) => {
      if (!LINK_ANSWER.test(path)) return null;
      const agent = body.agent as { key_proof: KeyProof };
      seen = agent.key_proof;
      return forged ? { ...body, agent: { ...agent, key_proof: forged } } : null;
    });
    try {
      const logPath = join(work.path, `${identity.agentId}.log.json`);
      const sender = new HandoffClient({ baseUrl: proxy.url, apiKey, logPath });
      const path = join(work.path, "twice.bin");
      writeFileSync(path, randomBytes(10));
      const first = await owner.createRequest({ title: "First" });
      await sender.sendToRequest({ link: `${proxy.url}/r/${first.token}`, paths: [path] });
      const kept = openCheckpoint(
        JSON.parse(readFileSync(logPath, "utf8")).checkpoint,
        parseVerifierKey((await server.call("GET", "/v1/log/key")).json().vkey),
      );

      // The log's own key signs a tree of the kept size that holds the agent's leaf, with another root.
      const seed = Buffer.from(
        readFileSync(join(server.service.config.dataDir, "log.key"), "utf8").trim(),
        "base64",
      );
      forged = await forkedProof(seen as unknown as KeyProof, kept.origin, kept.size, seed);
      const second = await owner.createRequest({ title: "Second" });
      const refused = sender.sendToRequest({ link: `${proxy.url}/r/${second.token}`, paths: [path] });
      await expect(refused).rejects.toBeInstanceOf(HandoffCustodyError);
      await expect(refused).rejects.toMatchObject({ code: "LOG_FORKED" });
      const secondNow = (await owner.listRequests()).find((r) => r.id === second.id);
      expect(secondNow).toMatchObject({ uses: 0, status: "active" });
    } finally {
      await proxy.close();
    }
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
