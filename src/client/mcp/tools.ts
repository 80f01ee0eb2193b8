import { isAbsolute } from "node:path";
import { type HandoffClient, SDK_VERSION, type ShieldLevel } from "@handoff/sdk";
import { McpServer, type ToolCallback } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { CallToolResult, ToolAnnotations } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { EXPIRES_IN_SECONDS, type ExpiresIn } from "../../contract/transfers.js";
import { MAX_INBOX_WAIT_SECONDS, wholeInbox } from "../commands/inbox.js";
import { receiveInto } from "../commands/receive.js";
import { describeError } from "../errors.js";
import { InboxListing, Profile, Reachable, ReceivedTransfer, RequestLink, Transfer } from "./answers.js";

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

/** What a model is told of a tool: every hint set, so no client has to guess a default. */
interface ToolSpec<Input extends z.ZodRawShape, Output extends z.ZodObject> {
  description: string;
  inputSchema: Input;
  outputSchema: Output;
  annotations: Required<Pick<ToolAnnotations, "readOnlyHint" | "destructiveHint" | "openWorldHint">>;
}

/**
 * Registers a tool whose work returns what its outputSchema declares (the MCP SDK checks the
 * answer against it too); a failure becomes an isError result.
 */
function addTool<Input extends z.ZodRawShape, Output extends z.ZodObject>(
  server: McpServer,
  name: string,
  spec: ToolSpec<Input, Output>,
  work: (input: z.output<z.ZodObject<Input>>) => Promise<z.input<Output>>,
): void {
  const run = async (input: z.output<z.ZodObject<Input>>): Promise<CallToolResult> => {
    try {
      return answer(await work(input));
    } catch (error) {
      return failure(error);
    }
  };
  // The SDK's callback type is conditional on the shape, which TypeScript cannot resolve for a
  // generic one: `run` takes the shape's parsed input, which is what the SDK passes.
  server.registerTool(name, spec, run as unknown as ToolCallback<Input>);
}

const NO_INPUT = {};

const expiresIn = z.enum(Object.keys(EXPIRES_IN_SECONDS) as [ExpiresIn, ...ExpiresIn[]]);

/**
 * The Handoff MCP server with the five tools of decisions 5.5 and request_file of 10.5, acting as
 * the client's agent.
 */
export function handoffMcpServer({ client, shield, downloadsDir }: McpOptions): McpServer {
  const server = new McpServer({ name: "handoff", version: SDK_VERSION }, { capabilities: { logging: {} } });

  addTool(
    server,
    "send_file",
    {
      description:
        "Send files to an agent (its slug) or a person (an e-mail address), encrypted end to end and signed. Returns the transfer. Uses up one of the plan's transfers this month, and storage for the files until they are deleted or expire.",
      inputSchema: {
        to: z.string().min(1).describe("The recipient: an agent's slug, or an e-mail address for a person"),
        paths: z
          .array(absolutePath)
          .min(1)
          .describe(
            "Absolute paths of the files (or folders: their regular files go, named relative to the folder's parent) to send",
          ),
        message: z.string().max(4000).optional().describe("A note the recipient sees with the files"),
        max_downloads: z
          .number()
          .int()
          .min(1)
          .max(1000)
          .optional()
          .describe("How many downloads the transfer allows before it ends (default 10)"),
        expires_in: expiresIn
          .optional()
          .describe("How long the transfer lives (default 24h), capped by the plan's retention"),
        account: z
          .string()
          .optional()
          .describe("The recipient's account (its id or e-mail), when the slug is on more than one account"),
      },
      outputSchema: Transfer,
      annotations: { readOnlyHint: false, destructiveHint: false, openWorldHint: true },
    },
    (input) =>
      client.send({
        to: input.to,
        paths: input.paths,
        message: input.message,
        maxDownloads: input.max_downloads,
        expiresIn: input.expires_in,
        account: input.account,
      }),
  );

  addTool(
    server,
    "check_inbox",
    {
      description:
        "List the transfers waiting in this agent's inbox, optionally waiting for a new one. Uses up nothing: downloads are counted only by download_transfer.",
      inputSchema: {
        wait_seconds: z
          .number()
          .int()
          .min(0)
          .max(MAX_INBOX_WAIT_SECONDS)
          .default(0)
          .describe("Seconds to wait for a new transfer when the inbox is empty (0: answer at once)"),
      },
      outputSchema: InboxListing,
      annotations: { readOnlyHint: true, destructiveHint: false, openWorldHint: false },
    },
    (input) => wholeInbox(client, input.wait_seconds),
  );

  addTool(
    server,
    "download_transfer",
    {
      description:
        "Download, verify, decrypt and scan (Shield) a transfer's files into a folder. Returns each file's path, size and Shield verdict; a blocked file is not written. Uses up one of the transfer's downloads (max_downloads); the last one ends the transfer and, when it was sent with auto_delete, deletes its files from the server.",
      inputSchema: {
        transfer_id: z.string().min(1).describe("The transfer's id, as check_inbox lists it"),
        out_dir: absolutePath
          .optional()
          .describe(
            "Absolute folder to write into, created when missing (default: the server's downloads folder)",
          ),
      },
      outputSchema: ReceivedTransfer,
      annotations: { readOnlyHint: false, destructiveHint: true, openWorldHint: true },
    },
    (input) => receiveInto(client, input.transfer_id, { outDir: input.out_dir ?? downloadsDir, shield }),
  );

  addTool(
    server,
    "request_file",
    {
      description:
        "Ask a person (or any service) for files: returns a request link (url) to hand them. Whoever opens it can send this agent files with no account, encrypted in their browser or with `handoff send --to-request` to this agent's key; they arrive in the inbox (check_inbox) as mode \"request\", the sender's name and e-mail unverified. Uses up nothing until someone sends; each send then counts as one of the plan's transfers this month, and its files use storage.",
      inputSchema: {
        title: z
          .string()
          .min(1)
          .max(200)
          .describe('What the link asks for, shown to the sender, e.g. "Your March invoice"'),
        message: z.string().max(2000).optional().describe("More words for the sender, shown as text"),
        max_files: z
          .number()
          .int()
          .min(1)
          .max(1000)
          .optional()
          .describe("How many files one send may hold (default 10)"),
        expires_in: expiresIn
          .optional()
          .describe("How long the link stays open (default 7d), capped by the plan's retention"),
      },
      outputSchema: RequestLink,
      annotations: { readOnlyHint: false, destructiveHint: false, openWorldHint: true },
    },
    (input) =>
      client.createRequest({
        title: input.title,
        message: input.message,
        maxFiles: input.max_files,
        expiresIn: input.expires_in,
      }),
  );

  addTool(
    server,
    "list_connections",
    {
      description: "The account's connections, and the agents this agent can send to. Uses up nothing.",
      inputSchema: NO_INPUT,
      outputSchema: Reachable,
      annotations: { readOnlyHint: true, destructiveHint: false, openWorldHint: false },
    },
    async () => {
      const [connections, sendable] = await Promise.all([client.connections(), client.sendable()]);
      return { connections, sendable };
    },
  );

  addTool(
    server,
    "get_profile",
    {
      description:
        "This agent's startup profile: agent, plan limits, inbox summary, urgent broadcasts. Uses up nothing.",
      inputSchema: NO_INPUT,
      outputSchema: Profile,
      annotations: { readOnlyHint: true, destructiveHint: false, openWorldHint: false },
    },
    () => client.profile(),
  );

  return server;
}
