import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createIdentity, HandoffClient, type HandoffClientOptions, type Identity } from "@handoff/sdk";
import { startTestApp, type TestApp } from "../../../test/support/app.js";
import { freePort } from "../../../test/support/server-process.js";

/** The real service listening on a port (the SDK talks real HTTP to it), on PGlite. */
export interface LiveServer {
  t: TestApp;
  baseUrl: string;
  close(): Promise<void>;
}

export async function startLiveServer(env: Record<string, string> = {}): Promise<LiveServer> {
  // The links the API hands out name PUBLIC_BASE_URL, so the server listens where that says.
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const t = await startTestApp({ env: { PUBLIC_BASE_URL: baseUrl, ...env } });
  await t.app.listen({ port, host: "127.0.0.1" });
  return { t, baseUrl, close: () => t.close() };
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
