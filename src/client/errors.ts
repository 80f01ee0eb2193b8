import { HandoffCryptoError, HandoffError } from "@handoff/sdk";
import { errorLine } from "../cli-errors.js";

/**
 * One sentence a user can act on, for the CLI's stderr line and the MCP server's error results:
 * the SDK's message with its error code (the API's code for API errors), else the error's message.
 */
export function describeError(error: unknown): string {
  if (error instanceof HandoffError || error instanceof HandoffCryptoError)
    return errorLine(new Error(`${error.message} (${error.code})`));
  return errorLine(error);
}
