import { isAbsolute } from "node:path";
import { type HandoffClient, SDK_VERSION, type ShieldLevel } from "@handoff/sdk";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { MAX_INBOX_WAIT_SECONDS, wholeInbox } from "../commands/inbox.js";
import { receiveInto } from "../commands/receive.js";
import { describeError } from "../errors.js";

export interface McpOptions {
  client: HandoffClient;
  shield: ShieldLevel | undefined;
  /** Absolute: `--downloads DIR`, else ./handoff-downloads of the directory the server started in. */
  downloadsDir: string;
}

const absolutePath = z.string().refine(isAbsolute, "must be an absolute path");

/** Decisions 5.5: one text item holding the JSON, and the same object as structuredContent. */
function answer(value: object): CallToolResult {
  return { content: [{ type: "text", text: JSON.stringify(value) }], structuredContent: { ...value } };
}

/** A failure is a result with isError, one sentence naming the cause; the server keeps serving. */
function failure(error: unknown): CallToolResult {
  return { content: [{ type: "text", text: describeError(error) }], isError: true };
}

const guarded =
  <I>(work: (input: I) => Promise<object>) =>
  async (input: I): Promise<CallToolResult> => {
    try {
      return answer(await work(input));
    } catch (error) {
      return failure(error);
    }
  };

/** The Handoff MCP server with the five tools of decisions 5.5, acting as the client's agent. */
export function handoffMcpServer({ client, shield, downloadsDir }: McpOptions): McpServer {
  const server = new McpServer({ name: "handoff", version: SDK_VERSION }, { capabilities: { logging: {} } });

  server.registerTool(
    "send_file",
    {
      description:
        "Send files to an agent (its slug) or a person (an e-mail address), encrypted end to end and signed. Returns the transfer.",
      inputSchema: {
        to: z.string().min(1).describe("recipient: an agent slug, or an e-mail address for a person"),
        paths: z
          .array(absolutePath)
          .min(1)
          .describe(
            "absolute paths of the files (or folders: their regular files go, named relative to the folder's parent) to send",
          ),
        message: z.string().optional(),
        max_downloads: z.number().int().min(1).max(1000).optional(),
        expires_in: z.string().optional().describe('how long the transfer lives, e.g. "1h", "24h", "7d"'),
        account: z.string().optional().describe("the recipient's account, when the slug is ambiguous"),
      },
    },
    guarded((input) =>
      client.send({
        to: input.to,
        paths: input.paths,
        message: input.message,
        maxDownloads: input.max_downloads,
        expiresIn: input.expires_in,
        account: input.account,
      }),
    ),
  );

  server.registerTool(
    "check_inbox",
    {
      description: "List the transfers waiting in this agent's inbox, optionally waiting for a new one.",
      inputSchema: {
        wait_seconds: z.number().int().min(0).max(MAX_INBOX_WAIT_SECONDS).default(0),
      },
      annotations: { readOnlyHint: true },
    },
    guarded((input) => wholeInbox(client, input.wait_seconds)),
  );

  server.registerTool(
    "download_transfer",
    {
      description:
        "Download, verify, decrypt and scan (Shield) a transfer's files into a folder. Returns each file's path, size and Shield verdict; a blocked file is not written.",
      inputSchema: {
        transfer_id: z.string().min(1),
        out_dir: absolutePath.optional().describe("absolute folder to write into, created when missing"),
      },
    },
    guarded((input) =>
      receiveInto(client, input.transfer_id, { outDir: input.out_dir ?? downloadsDir, shield }),
    ),
  );

  server.registerTool(
    "list_connections",
    {
      description: "The account connections, and the agents this agent can send to.",
      annotations: { readOnlyHint: true },
    },
    guarded(async () => {
      const [connections, sendable] = await Promise.all([client.connections(), client.sendable()]);
      return { connections, sendable };
    }),
  );

  server.registerTool(
    "get_profile",
    {
      description: "This agent's startup profile: agent, plan limits, inbox summary, urgent broadcasts.",
      annotations: { readOnlyHint: true },
    },
    guarded(() => client.profile()),
  );

  return server;
}
