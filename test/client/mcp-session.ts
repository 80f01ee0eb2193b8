import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import {
  type CallToolResult,
  type LoggingMessageNotification,
  LoggingMessageNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { expect } from "vitest";
import { CLI, eventually, ROOT } from "./support.js";

/** `handoff mcp` spawned by the MCP SDK's own client over stdio, as an MCP host runs it. */
export class McpSession {
  readonly logs: LoggingMessageNotification["params"][] = [];
  readonly protocolErrors: Error[] = [];
  stderr = "";

  private constructor(readonly client: Client) {}

  static async start(args: string[], env: Record<string, string>): Promise<McpSession> {
    const [node, ...nodeArgs] = CLI;
    const { HANDOFF_URL: _url, HANDOFF_API_KEY: _key, ...inherited } = process.env;
    const transport = new StdioClientTransport({
      command: node,
      args: [...nodeArgs, "mcp", ...args],
      cwd: ROOT,
      env: { ...(inherited as Record<string, string>), ...env },
      stderr: "pipe",
    });
    const client = new Client({ name: "handoff-test", version: "1.0.0" });
    const session = new McpSession(client);
    transport.stderr?.on("data", (chunk: Buffer) => {
      session.stderr += chunk.toString("utf8");
    });
    client.setNotificationHandler(LoggingMessageNotificationSchema, (notification) => {
      session.logs.push(notification.params);
    });
    client.onerror = (error) => session.protocolErrors.push(error);
    await client.connect(transport);
    return session;
  }

  async call(name: string, args: Record<string, unknown> = {}): Promise<CallToolResult> {
    return (await this.client.callTool({ name, arguments: args })) as CallToolResult;
  }

  /** A successful call: its structuredContent, checked to equal the JSON of its one text item. */
  async ok<T = Record<string, unknown>>(name: string, args: Record<string, unknown> = {}): Promise<T> {
    const result = await this.call(name, args);
    const text = result.content[0]?.type === "text" ? result.content[0].text : "";
    if (result.isError) throw new Error(`${name} failed: ${text}`);
    expect(result.content).toHaveLength(1);
    expect(JSON.parse(text)).toEqual(result.structuredContent);
    return result.structuredContent as T;
  }

  waitFor(ready: () => boolean, what: string): Promise<void> {
    return eventually(ready, what, () => `stderr: ${this.stderr}`);
  }

  close = () => this.client.close();
}
