import { once } from "node:events";
import { resolve } from "node:path";
import type { HandoffClient } from "@handoff/sdk";
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { tuneHeapForStreaming } from "../../streaming-heap.js";
import { agentClient } from "../environment.js";
import { describeError } from "../errors.js";
import { announceArrivals } from "../mcp/arrivals.js";
import { type Announcement, startupAnnouncements } from "../mcp/startup.js";
import { handoffMcpServer } from "../mcp/tools.js";
import { required, shieldOption } from "../options.js";
import { warn } from "../output.js";

/** Decisions 5.5: the only folder that depends on the working directory. */
const DEFAULT_DOWNLOADS = "handoff-downloads";

/**
 * `handoff mcp --identity FILE [--shield LEVEL] [--downloads DIR]`: the MCP server over stdio.
 * stdout carries protocol messages only; everything else goes to stderr. Each transfer that
 * arrives while it serves is announced (../mcp/arrivals.ts). It serves until stdin closes (the
 * client went away) or SIGINT/SIGTERM.
 */
export async function mcp(values: {
  identity?: string;
  shield?: string;
  downloads?: string;
}): Promise<number> {
  tuneHeapForStreaming();
  const identity = required(values.identity, "--identity FILE");
  const shield = shieldOption(values.shield);
  const client = await agentClient(identity, "mcp");
  const server = handoffMcpServer({
    client,
    shield,
    downloadsDir: resolve(values.downloads ?? DEFAULT_DOWNLOADS),
  });

  const initialized = new Promise<void>((done) => {
    server.server.oninitialized = done;
  });
  const stopped = Promise.race([
    once(process.stdin, "end"),
    once(process, "SIGINT"),
    once(process, "SIGTERM"),
  ]);
  await server.connect(new StdioServerTransport());
  void announceStartup(client, server, initialized);
  const stop = new AbortController();
  void initialized.then(() => announceArrivals(client, server, stop.signal));
  await stopped;
  stop.abort();
  await server.close();
  return 0;
}

/** Reads the startup profile; its lines go to stderr now and to the client once it is initialized. */
async function announceStartup(
  client: HandoffClient,
  server: McpServer,
  initialized: Promise<void>,
): Promise<void> {
  let announcements: Announcement[];
  try {
    announcements = startupAnnouncements(await client.profile());
  } catch (error) {
    announcements = [{ level: "error", text: `could not read the startup profile: ${describeError(error)}` }];
  }
  for (const { text } of announcements) warn(text);
  await initialized;
  for (const { level, text } of announcements)
    await server.sendLoggingMessage({ level, logger: "handoff", data: text }).catch(() => {});
}
