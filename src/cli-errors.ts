import { terminalSafe } from "./client/terminal-text.js";

/** A command line `handoff` cannot run: one line on stderr, pointing at `handoff help`. */
export class UsageError extends Error {}

/** An error as the one stderr line a CLI prints: its message, with the cause `fetch` hides. */
export function errorLine(error: unknown): string {
  if (!(error instanceof Error)) return oneLine(String(error));
  const cause = error.cause instanceof Error ? error.cause.message : null;
  return oneLine(cause && !error.message.includes(cause) ? `${error.message}: ${cause}` : error.message);
}

/** One line, with whatever a server or sender put in the message shown and never acted on by a terminal. */
const oneLine = (text: string) => terminalSafe(text.replace(/\s*\n\s*/g, "; ").trim());
