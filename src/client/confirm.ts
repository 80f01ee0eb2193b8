import { createInterface } from "node:readline/promises";
import { UsageError } from "../cli-errors.js";

/**
 * Asks before an action that cannot be undone. --yes skips the question; without a terminal to
 * ask on, the action needs --yes, so a script never deletes by accident.
 */
export async function confirmed(what: string, yes: boolean | undefined): Promise<boolean> {
  if (yes) return true;
  if (!process.stdin.isTTY || !process.stderr.isTTY)
    throw new UsageError(`${what} cannot be undone: add --yes to confirm it`);
  const prompt = createInterface({ input: process.stdin, output: process.stderr });
  try {
    const answer = await prompt.question(`${what}? This cannot be undone. [y/N] `);
    return /^y(es)?$/i.test(answer.trim());
  } finally {
    prompt.close();
  }
}
