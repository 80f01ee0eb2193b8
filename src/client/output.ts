import { terminalSafe, terminalSafeJson } from "./terminal-text.js";

/** Machine-readable answers: JSON on stdout, and nothing else goes there (decisions 5.5). */
export function printJson(value: unknown): void {
  process.stdout.write(`${terminalSafeJson(JSON.stringify(value, null, 2))}\n`);
}

/** One compact JSON document per line, for commands that answer more than once (listen). */
export function printJsonLine(value: unknown): void {
  process.stdout.write(`${terminalSafeJson(JSON.stringify(value))}\n`);
}

/** Text as it comes (a CSV report); on a terminal, with what the terminal would act on escaped. */
export function printText(text: string): void {
  process.stdout.write(process.stdout.isTTY ? terminalSafe(text, { keepNewlines: true }) : text);
}

/** One line on stderr: whatever it quotes (a file name, a server's message) is shown, never acted on. */
export function warn(line: string): void {
  process.stderr.write(`${terminalSafe(line)}\n`);
}
