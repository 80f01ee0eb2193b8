import type { HandoffClient } from "@handoff/sdk";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import openapiTS, { astToString } from "openapi-typescript";
import { handoffMcpServer } from "../src/client/mcp/tools.js";
import { OPERATIONS } from "../src/contract/index.js";
import { openApiDocument } from "../src/contract/openapi.js";

/** The server a local `npm start` answers on, as the committed document names it. */
export const DOCUMENTED_SERVER = "http://127.0.0.1:8080";
export const OPENAPI_FILE = "docs/openapi.json";
export const SDK_TYPES_FILE = "packages/sdk/src/api-types.ts";
/** The MCP tools as a model sees them, read by the Python package's handoff.tools (issue 24). */
export const PYTHON_TOOLS_FILE = "packages/python/src/handoff/mcp_tools.json";

/** docs/openapi.json as it must read: the contract's document, for a local server. */
export function openApiText(): string {
  return `${JSON.stringify(openApiDocument(OPERATIONS, DOCUMENTED_SERVER), null, 2)}\n`;
}

/**
 * The SDK's API types as they must read: openapi-typescript's rendering of the document. A field
 * with a default stays optional where the document does not require it: by default the renderer
 * made it required, so a request body's defaulted fields (`expires_in`, `max_downloads`, …) could
 * not be left out by a client typed against it. Answers are unchanged (their defaults are required).
 */
export async function sdkTypesText(): Promise<string> {
  const ast = await openapiTS(JSON.parse(openApiText()), { defaultNonNullable: false });
  return [
    "// Generated from docs/openapi.json by `npm run contract` (openapi-typescript): do not edit.",
    "// The contract lives in src/contract/; a test fails when this file drifts from it.",
    "",
    astToString(ast),
  ].join("\n");
}

/**
 * The MCP server's tools as its tools/list answers them over an MCP connection (the SDK's in-memory
 * one): names, descriptions, input and output schemas, annotations. handoff.tools reads this file,
 * so the Python tools describe themselves exactly as the MCP tools do.
 */
export async function mcpToolsText(): Promise<string> {
  // Listing calls no tool: the client behind them is never used.
  const server = handoffMcpServer({ client: {} as HandoffClient, shield: undefined, downloadsDir: "/" });
  const [serverSide, clientSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const client = new Client({ name: "write-contract", version: "1" });
  await client.connect(clientSide);
  try {
    const { tools } = await client.listTools();
    return `${JSON.stringify(tools, null, 2)}\n`;
  } finally {
    await client.close();
  }
}
