import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  createEncryptStream,
  createIdentity,
  HandoffClient,
  type HandoffClientOptions,
  type Identity,
  newContentKey,
  signTransfer,
  wrapContentKey,
} from "@handoff/sdk";
import { afterAll, beforeAll } from "vitest";
import { startTestApp, type TestApp } from "../../../test/support/app.js";
import { freePort } from "../../../test/support/server-process.js";

/** The real service listening on a port (the SDK talks real HTTP to it), on PGlite. */
export interface LiveServer {
  t: TestApp;
  baseUrl: string;
  close(): Promise<void>;
}

export async function startLiveServer(
  env: Record<string, string> = {},
  database: "pglite" | "postgres" = "pglite",
): Promise<LiveServer> {
  // The links the API hands out name PUBLIC_BASE_URL, so the server listens where that says.
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const t = await startTestApp({ database, env: { PUBLIC_BASE_URL: baseUrl, ...env } });
  await t.app.listen({ port, host: "127.0.0.1" });
  return { t, baseUrl, close: () => t.close() };
}

/** What a describe block of SDK tests works with: a listening service, a team account, two agents. */
export interface AliceAndBob {
  server: LiveServer;
  apiKey: string;
  alice: TestAgent;
  bob: TestAgent;
  /** A temporary directory for the block's files. */
  dir: string;
}

/**
 * Call inside `describe`: before the block's tests, starts the service and registers the agents
 * alice and bob (clients made with `client` options) on a team account; after them, stops it all.
 */
export function aliceAndBob(
  options: { client?: Partial<HandoffClientOptions>; database?: "pglite" | "postgres" } = {},
): AliceAndBob {
  const dir = tempDir();
  const world = { dir: dir.path } as AliceAndBob;
  beforeAll(async () => {
    world.server = await startLiveServer({}, options.database);
    ({ apiKey: world.apiKey } = await world.server.t.newAccount("team"));
    world.alice = await newAgent(world.server, world.apiKey, "alice", options.client);
    world.bob = await newAgent(world.server, world.apiKey, "bob", options.client);
  });
  afterAll(async () => {
    await world.server?.close();
    dir.cleanup();
  });
  return world;
}

/** A fresh temporary directory, removed by `cleanup()`. */
export function tempDir(prefix = "handoff-sdk-"): { path: string; cleanup(): void } {
  const path = mkdtempSync(join(tmpdir(), prefix));
  return { path, cleanup: () => rmSync(path, { recursive: true, force: true }) };
}

/** Every entry in `dir`, temporaries included, sorted. */
export function entries(dir: string): string[] {
  try {
    return readdirSync(dir).sort();
  } catch {
    return [];
  }
}

/** A registered agent with its own identity and a client acting as it. */
export interface TestAgent {
  identity: Identity;
  client: HandoffClient;
}

export async function newAgent(
  server: LiveServer,
  apiKey: string,
  agentId: string,
  options: Partial<HandoffClientOptions> = {},
): Promise<TestAgent> {
  const identity = createIdentity(agentId);
  const client = new HandoffClient({ baseUrl: server.baseUrl, apiKey, identity, ...options });
  await client.registerAgent(identity);
  return { identity, client };
}

export interface RawFile {
  name: string;
  plain: Uint8Array;
  /** Changes the encrypted bytes before upload (tampering, truncation, extension). */
  alter?: (encrypted: Uint8Array) => Uint8Array;
}

export interface RawSendOptions {
  /** Who signs: the sender by default, another identity (a forgery) or nobody (null). */
  signer?: Identity | null;
  /** The names the signature covers, when they should differ from the files sent. */
  signedNames?: string[];
}

/** Encrypts a small file in memory with the crypto core. */
async function encryptSmall(contentKey: Uint8Array, plain: Uint8Array) {
  const { encryptionIv, stream } = createEncryptStream(contentKey);
  const source = new Blob([plain]).stream().pipeThrough(stream);
  return { encryptionIv, bytes: new Uint8Array(await new Response(source).arrayBuffer()) };
}

/**
 * Sends a transfer by hand, as a faulty or hostile client would: the files encrypted in the real
 * format (5.2, 5.3), then altered as asked, with a signature by `signer` over `signedNames`.
 */
export async function sendByHand(
  server: LiveServer,
  apiKey: string,
  options: RawSendOptions & { from: TestAgent; to: TestAgent; files: RawFile[] },
): Promise<string> {
  const sender = options.from.identity.agentId;
  const recipient = options.to.identity.agentId;
  const contentKey = newContentKey();
  const encryptedKey = await wrapContentKey(contentKey, options.to.identity.x25519.publicKey);
  const sealed = await Promise.all(options.files.map((file) => encryptSmall(contentKey, file.plain)));
  const signer = options.signer === undefined ? options.from.identity : options.signer;
  const form = new FormData();
  const fields = {
    mode: "agent-to-agent",
    sender,
    recipient,
    is_encrypted: "true",
    encrypted_key: encryptedKey,
    encryption_algorithm: "AES-256-GCM",
    recipient_key_version: "1",
  };
  for (const [name, value] of Object.entries(fields)) form.append(name, value);
  if (signer) {
    const names = options.signedNames ?? options.files.map((file) => file.name);
    const signature = signTransfer(signer.ed25519.privateKey, {
      sender,
      recipient,
      recipientKeyVersion: 1,
      encryptedKey,
      files: names.map((name, index) => ({ name, encryptionIv: sealed[index]?.encryptionIv ?? "" })),
    });
    form.append("sender_signature", signature);
  }
  for (const file of sealed) form.append("encryption_iv", file.encryptionIv);
  options.files.forEach((file, index) => {
    const bytes = sealed[index]?.bytes as Uint8Array;
    form.append("files", new Blob([file.alter ? file.alter(bytes) : bytes]), file.name);
  });
  const response = await fetch(`${server.baseUrl}/v1/transfers`, {
    method: "POST",
    headers: { authorization: `Bearer ${apiKey}` },
    body: form,
  });
  const text = await response.text();
  if (response.status !== 201) throw new Error(`hand-made send failed: ${response.status} ${text}`);
  return (JSON.parse(text) as { id: string }).id;
}
