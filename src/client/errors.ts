import { HandoffApiError, HandoffCryptoError, HandoffCustodyError, HandoffError } from "@handoff/sdk";
import { errorLine } from "../cli-errors.js";
import { DEFAULT_HANDOFF_URL } from "./environment.js";

/** The socket error codes under a failed request (fetch hides them in its causes). */
function causeCodes(error: unknown): string[] {
  const codes: string[] = [];
  for (let current = error; current instanceof Error; current = current.cause) {
    const code = (current as NodeJS.ErrnoException).code;
    if (code) codes.push(code);
  }
  return codes;
}

/** What to do about an error whose cause alone does not say it; null when the message is enough. */
function fix(error: HandoffError): string | null {
  if (error.code === "NETWORK_ERROR") {
    const codes = causeCodes(error);
    const server = process.env.HANDOFF_URL || DEFAULT_HANDOFF_URL;
    if (codes.includes("ECONNREFUSED"))
      return `nothing answers at ${server}: start the server (npm start) or set HANDOFF_URL to where it runs`;
    if (codes.includes("ENOTFOUND") || codes.includes("EAI_AGAIN"))
      return `the host of ${server} is unknown: check HANDOFF_URL`;
    return null;
  }
  if (error instanceof HandoffApiError && error.status === 401)
    return "check HANDOFF_API_KEY: it must be a live API key of the account (handoff keys list on a working key)";
  return null;
}

/**
 * One sentence a user can act on, for the CLI's stderr line and the MCP server's error results:
 * the SDK's message with its error code (the API's code for API errors), and the way out when the
 * message does not say it; else the error's message.
 */
export function describeError(error: unknown): string {
  if (error instanceof HandoffError || error instanceof HandoffCryptoError) {
    const hint = error instanceof HandoffError ? fix(error) : null;
    return errorLine(new Error(`${error.message} (${error.code})${hint ? `; ${hint}` : ""}`));
  }
  return errorLine(error);
}

/** Decisions 9.6: a custody failure (the log does not back a key, or forked) exits 5; anything else 1. */
export const EXIT_CUSTODY = 5;

export function exitCodeOf(error: unknown): number {
  return error instanceof HandoffCustodyError ? EXIT_CUSTODY : 1;
}
