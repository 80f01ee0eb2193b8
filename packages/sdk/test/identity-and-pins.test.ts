import { readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  createIdentity,
  defaultPinsPath,
  HandoffApiError,
  HandoffClient,
  HandoffError,
  HandoffKeyChangedError,
  loadIdentity,
  saveIdentity,
  toBase64,
} from "@handoff/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type LiveServer, startLiveServer, tempDir } from "./support.js";

const dir = tempDir();
afterAll(() => dir.cleanup());

describe("identity files", () => {
  it("saves the five fields of decisions 5.5 with mode 0600 and loads them back", async () => {
    const identity = createIdentity("writer.bot");
    const path = join(dir.path, "ids", "writer.json");
    await saveIdentity(path, identity);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    const file = JSON.parse(readFileSync(path, "utf8"));
    expect(Object.keys(file).sort()).toEqual([
      "agent_id",
      "ed25519_private_key",
      "ed25519_public_key",
      "x25519_private_key",
      "x25519_public_key",
    ]);
    expect(file.x25519_public_key).toBe(toBase64(identity.x25519.publicKey));
    expect(file.ed25519_private_key).toBe(toBase64(identity.ed25519.privateKey));
    const loaded = await loadIdentity(path);
    expect(loaded).toEqual({ ...identity, path });
  });

  it.each([
    ["a missing file", null, /no such file/],
    ["a file that is not JSON", "not json", /is not JSON/],
    ["a missing key", JSON.stringify({ agent_id: "a" }), /x25519_private_key is missing/],
  ])("refuses %s with INVALID_IDENTITY", async (_case, text, message) => {
    const path = join(dir.path, `bad-${Math.random()}.json`);
    if (text !== null) writeFileSync(path, text);
    const error = await loadIdentity(path).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(HandoffError);
    expect((error as HandoffError).code).toBe("INVALID_IDENTITY");
    expect((error as Error).message).toMatch(message);
  });

  it("refuses a file whose public key does not belong to its private key", async () => {
    const path = join(dir.path, "mixed.json");
    await saveIdentity(path, createIdentity("mixed"));
    const file = JSON.parse(readFileSync(path, "utf8"));
    file.ed25519_public_key = toBase64(createIdentity("other").ed25519.publicKey);
    writeFileSync(path, JSON.stringify(file));
    await expect(loadIdentity(path)).rejects.toThrow(/ed25519_public_key does not belong/);
  });

  it("refuses an agent id the API would refuse", () => {
    expect(() => createIdentity("no spaces")).toThrow(HandoffError);
  });
});

describe("register, resolve and key pinning", () => {
  let server: LiveServer;
  let apiKey: string;

  beforeAll(async () => {
    server = await startLiveServer();
    ({ apiKey } = await server.t.newAccount("team"));
  });
  afterAll(async () => server?.close());

  it("registers one-shot with both public keys, which resolve returns", async () => {
    const identity = createIdentity("keys");
    const client = new HandoffClient({ baseUrl: server.baseUrl, apiKey, identity });
    const agent = await client.registerAgent(identity, { name: "Keys" });
    expect(agent).toMatchObject({
      agent_id: "keys",
      connection_status: "connected",
      key_version: 1,
      name: "Keys",
    });
    const resolved = await client.resolve("keys");
    expect(resolved).toMatchObject({
      agent_id: "keys",
      public_key: toBase64(identity.x25519.publicKey),
      signing_public_key: toBase64(identity.ed25519.publicKey),
      key_version: 1,
    });
  });

  it("answers API errors as HandoffApiError with the API's code", async () => {
    const client = new HandoffClient({ baseUrl: server.baseUrl, apiKey });
    const error = await client.resolve("nobody-here").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(HandoffApiError);
    expect(error).toMatchObject({ status: 404, code: "NOT_FOUND" });
    const taken = await client.registerAgent(createIdentity("keys")).catch((e: unknown) => e);
    expect(taken).toMatchObject({ status: 409, code: "AGENT_ID_TAKEN" });
  });

  it("refuses a rotated key of a pinned agent unless the rotation is accepted, across clients", async () => {
    const senderPath = join(dir.path, "sender.json");
    const sender = createIdentity("pinner");
    await saveIdentity(senderPath, sender);
    const first = new HandoffClient({
      baseUrl: server.baseUrl,
      apiKey,
      identity: await loadIdentity(senderPath),
    });
    await first.registerAgent(sender);
    const original = createIdentity("rotating");
    const registered = await first.registerAgent(original);
    await first.resolve("rotating");
    const pinsPath = defaultPinsPath(senderPath);
    expect(pinsPath).toBe(join(dir.path, "sender.pins.json"));
    expect(statSync(pinsPath).mode & 0o777).toBe(0o600);

    // Key rotation (decisions 3.7): disconnect, then register the slug again with new keys.
    const deleted = await server.t.call("DELETE", `/v1/agents/${registered.id}`, { key: apiKey });
    expect(deleted.statusCode).toBe(200);
    const rotated = createIdentity("rotating");
    await first.registerAgent(rotated);

    // A new client reading the same identity file finds the pin and refuses the new key.
    const second = new HandoffClient({
      baseUrl: server.baseUrl,
      apiKey,
      identity: await loadIdentity(senderPath),
    });
    const error = await second.resolve("rotating").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(HandoffKeyChangedError);
    expect(error).toMatchObject({
      code: "KEY_CHANGED",
      pinned: { public_key: toBase64(original.x25519.publicKey), key_version: 1 },
      current: { public_key: toBase64(rotated.x25519.publicKey), key_version: 2 },
    });
    // Sending refuses it too, before any byte leaves.
    const file = join(dir.path, "secret.txt");
    writeFileSync(file, "secret");
    await expect(second.send({ to: "rotating", paths: [file] })).rejects.toMatchObject({
      code: "KEY_CHANGED",
    });

    const accepted = await second.resolve("rotating", { acceptRotation: true });
    expect(accepted).toMatchObject({
      key_version: 2,
      signing_public_key: toBase64(rotated.ed25519.publicKey),
    });
    // The new key is pinned now: no more refusal.
    await expect(second.resolve("rotating")).resolves.toMatchObject({ key_version: 2 });
    const pins = JSON.parse(readFileSync(pinsPath, "utf8"));
    expect(pins.rotating).toEqual({
      public_key: toBase64(rotated.x25519.publicKey),
      signing_public_key: toBase64(rotated.ed25519.publicKey),
      key_version: 2,
    });
  });

  it("reads the startup profile, broadcasts, connections and sendable agents as the identity's agent", async () => {
    const identity = createIdentity("profiled");
    const client = new HandoffClient({ baseUrl: server.baseUrl, apiKey, identity });
    await client.registerAgent(identity);
    const published = await server.t.call("POST", "/v1/admin/broadcasts", {
      key: "test-admin-token-0123456789",
      body: { title: "Maintenance tonight", content: "Be ready.", severity: "critical" },
    });
    expect(published.statusCode, published.body).toBe(201);

    const profile = await client.profile();
    expect(profile.agent.agent_id).toBe("profiled");
    expect(profile.broadcasts.urgent.map((b) => b.title)).toContain("Maintenance tonight");

    const page = await client.broadcasts({ severity: "critical" });
    const broadcast = page.broadcasts.find((b) => b.title === "Maintenance tonight");
    expect(broadcast).toBeDefined();
    await client.markBroadcastRead(broadcast?.id as string);
    const after = await client.broadcasts();
    expect(after.broadcasts.map((b) => b.id)).not.toContain(broadcast?.id);

    expect(await client.connections()).toEqual([]);
    const sendable = await client.sendable();
    expect(sendable.map((a) => a.agent_id)).toContain("profiled");
    expect(sendable.every((a) => a.own)).toBe(true);
  });
});
