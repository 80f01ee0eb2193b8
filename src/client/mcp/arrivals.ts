import { type HandoffClient, senderLabel, type Transfer } from "@handoff/sdk";
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { inboxEnd } from "../commands/inbox.js";
import { describeError } from "../errors.js";
import { warn } from "../output.js";
import type { Announcement } from "./startup.js";

/** What the MCP server says of a transfer that has just arrived: enough for the model to fetch it. */
export function arrivalAnnouncement(transfer: Transfer): Announcement {
  const files = transfer.file_count === 1 ? "1 file" : `${transfer.file_count} files`;
  return {
    level: "info",
    text: `new transfer ${transfer.id} from ${senderLabel(transfer)}: ${files}, ${transfer.total_size} bytes (download_transfer fetches it)`,
  };
}

/**
 * Decisions 8.4: while the MCP server runs, each transfer that reaches the agent's inbox after it
 * started is announced at once, on stderr and as an MCP logging message (the startup lines
 * already count what was waiting). The arrivals come from the inbox's event stream, else the
 * long-poll (the SDK's inboxEvents); they end when `signal` aborts.
 */
export async function announceArrivals(
  client: HandoffClient,
  server: McpServer,
  signal: AbortSignal,
): Promise<void> {
  try {
    const after = await inboxEnd(client);
    const arrivals = client.inboxEvents({
      signal,
      ...(after ? { after } : {}),
      onError: (error) => warn(`reading the inbox failed, trying again: ${describeError(error)}`),
    });
    for await (const { transfer } of arrivals) {
      if (transfer.status !== "active" || transfer.downloads > 0) continue;
      const { level, text } = arrivalAnnouncement(transfer);
      warn(text);
      await server.sendLoggingMessage({ level, logger: "handoff", data: text }).catch(() => {});
    }
  } catch (error) {
    if (!signal.aborted) warn(`new transfers are not announced: ${describeError(error)}`);
  }
}
