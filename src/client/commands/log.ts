import { createReadStream } from "node:fs";
import { mkdir, readFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { defaultLogPath, HandoffClient } from "@handoff/sdk";
import { parseVerifierKey, verifyExport } from "@handoff/sdk/transparency";
import { UsageError } from "../../cli-errors.js";
import { clientSettings, userAgent } from "../environment.js";
import { EXIT_CUSTODY } from "../errors.js";
import { required } from "../options.js";
import { printJson, warn } from "../output.js";

/** The verifier key to check with: --vkey, else the one pinned beside --identity. */
async function verifierKey(values: { vkey?: string; identity?: string }): Promise<string> {
  if (values.vkey) return values.vkey;
  if (!values.identity)
    throw new UsageError("give the log's key: --vkey VKEY, or --identity FILE whose pinned key to use");
  const pinned = JSON.parse(await readFile(defaultLogPath(resolve(values.identity)), "utf8")) as {
    vkey: string;
  };
  return pinned.vkey;
}

/**
 * `handoff log verify FILE [--vkey VKEY]` (decisions 9.7): checks an audit export offline, line by
 * line (never the whole file in memory); prints the report as JSON; exit 5 naming the first bad line.
 */
export async function logVerify(
  values: { vkey?: string; identity?: string },
  positionals: string[],
): Promise<number> {
  const file = required(positionals[0], "FILE");
  let key: ReturnType<typeof parseVerifierKey>;
  try {
    key = parseVerifierKey(await verifierKey(values));
  } catch (error) {
    throw new UsageError(`the log's verifier key: ${(error as Error).message}`);
  }
  const lines = createInterface({
    input: createReadStream(resolve(file)),
    crlfDelay: Number.POSITIVE_INFINITY,
  });
  const report = await verifyExport(lines, key);
  printJson(report);
  if (report.ok) return 0;
  warn(`${file}: line ${report.problem?.line}: ${report.problem?.message}`);
  return EXIT_CUSTODY;
}

/**
 * `handoff log witness --state DIR` (decisions 9.7): fetches the newest checkpoint, checks it is
 * consistent with the one kept in DIR (pinning the log key there at first use), keeps it, and
 * prints it. A forked log is one stderr line and exit 5.
 */
export async function logWitness(values: { state?: string }): Promise<number> {
  const state = resolve(required(values.state, "--state DIR"));
  await mkdir(state, { recursive: true, mode: 0o700 });
  const client = new HandoffClient({
    ...clientSettings(process.env),
    userAgent: userAgent("cli"),
    logPath: join(state, "log.json"),
  });
  const { note: _note, ...checkpoint } = await client.witnessLog();
  printJson(checkpoint);
  return 0;
}
