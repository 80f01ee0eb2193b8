/** Machine-readable answers: JSON on stdout, and nothing else goes there (decisions 5.5). */
export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

/** One compact JSON document per line, for commands that answer more than once (listen). */
export function printJsonLine(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value)}\n`);
}

export function warn(line: string): void {
  process.stderr.write(`${line}\n`);
}
