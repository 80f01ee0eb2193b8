import { HandoffCryptoError, HandoffError } from "@handoff/sdk";

/** A command line the CLI cannot run: printed with the usage text. */
export class UsageError extends Error {}

/**
 * One sentence a user can act on, for the CLI's stderr line and the MCP server's error results:
 * the SDK's message and error code (the API's for API errors), or the error's message (with the network cause `fetch` hides).
 */
export function describeError(error: unknown): string {
  if (error instanceof HandoffError || error instanceof HandoffCryptoError)
    return oneLine(`${error.message} (${error.code})`);
  if (!(error instanceof Error)) return oneLine(String(error));
  const cause = error.cause instanceof Error ? error.cause.message : null;
  return oneLine(cause && !error.message.includes(cause) ? `${error.message}: ${cause}` : error.message);
}

const oneLine = (text: string) => text.replace(/\s*\n\s*/g, "; ").trim();
