import { execFile } from "node:child_process";
import { rmSync } from "node:fs";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestApp, type TestApp } from "../support/app.js";
import { postgresServer } from "../support/databases.js";
import { freePort } from "../support/server-process.js";

const run = promisify(execFile);
const CLIENT = "test/openapi/client";
const TYPES = `${CLIENT}/api.d.ts`;
/** Not a literal: the root tsc must not follow it into code whose types exist only during this test. */
const FLOW = "./client/flow.js";

/** What the root tsc may know of ./client/flow.ts (the first test checks it against the generated types). */
interface Flow {
  sendAndReceive(
    baseUrl: string,
    apiKey: string,
    files: Record<string, string>,
  ): Promise<{
    agents: { agent_id: string; connection_status: string }[];
    sent: Record<string, unknown>;
    received: { name: string; text: string }[];
  }>;
}

/**
 * Issue 19's target: a client generated from docs/openapi.json with openapi-typescript and
 * openapi-fetch, by the commands docs/api.md gives, type-checks and carries a transfer end to end
 * against a real server listening on a port.
 */
describe("a client generated from docs/openapi.json", () => {
  let t: TestApp;
  let baseUrl: string;
  beforeAll(async () => {
    const port = await freePort();
    baseUrl = `http://127.0.0.1:${port}`;
    t = await startTestApp({
      database: postgresServer ? "postgres" : "pglite",
      env: { PUBLIC_BASE_URL: baseUrl },
    });
    await t.app.listen({ port, host: "127.0.0.1" });
    await run("node_modules/.bin/openapi-typescript", [
      "docs/openapi.json",
      "--default-non-nullable",
      "false",
      "-o",
      TYPES,
    ]);
  });
  afterAll(async () => {
    await t?.close();
    rmSync(TYPES, { force: true });
  });

  it("type-checks against the generated types", async () => {
    const checked = await run("node_modules/.bin/tsc", ["-p", `${CLIENT}/tsconfig.json`]).catch(
      (error: { stdout: string }) => ({ stdout: error.stdout, failed: true }),
    );
    expect(checked.stdout).toBe("");
  });

  it("registers two agents, sends a multipart transfer and downloads its files", async () => {
    const { sendAndReceive } = (await import(FLOW)) as Flow;
    const { apiKey } = await t.newAccount();
    const files = { "notes.txt": "written by a generated client", "more.txt": "a second file" };

    const delivery = await sendAndReceive(baseUrl, apiKey, files);

    expect(delivery.agents.map((agent) => [agent.agent_id, agent.connection_status])).toEqual([
      ["generated-alice", "connected"],
      ["generated-bob", "connected"],
    ]);
    expect(delivery.sent).toMatchObject({
      sender: "generated-alice",
      recipient: "generated-bob",
      mode: "agent-to-agent",
      file_count: 2,
      message: "from a generated client",
    });
    expect(Object.fromEntries(delivery.received.map((file) => [file.name, file.text]))).toEqual(files);
  });
});
