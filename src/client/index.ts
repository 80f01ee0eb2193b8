import { UsageError } from "../cli-errors.js";

/** A client command: runs with the arguments after its name and answers the process exit code. */
export type ClientCommand = (args: string[]) => Promise<number>;

/** Each command's module loads only when it runs (the MCP server's dependencies are not small). */
const COMMANDS: { words: string[]; load: () => Promise<ClientCommand> }[] = [
  { words: ["identity", "new"], load: async () => (await import("./commands/identity.js")).identityNew },
  { words: ["send"], load: async () => (await import("./commands/send.js")).send },
  { words: ["receive"], load: async () => (await import("./commands/receive.js")).receive },
  { words: ["inbox"], load: async () => (await import("./commands/inbox.js")).inbox },
  { words: ["listen"], load: async () => (await import("./commands/listen.js")).listen },
  { words: ["mcp"], load: async () => (await import("./commands/mcp.js")).mcp },
  { words: ["history"], load: async () => (await import("./commands/history.js")).history },
  { words: ["audit"], load: async () => (await import("./commands/history.js")).audit },
  { words: ["report"], load: async () => (await import("./commands/history.js")).report },
];

/** The client command `argv` names, with the arguments that follow its name; null for any other. */
export function clientCommand(argv: string[]): { run: ClientCommand; args: string[] } | null {
  const match = COMMANDS.find(({ words }) => words.every((word, i) => argv[i] === word));
  if (!match) return null;
  return { run: (args) => runReportingFailure(match.load, args), args: argv.slice(match.words.length) };
}

/** Runs a command; a failure other than a usage error is one stderr line and exit code 1. */
async function runReportingFailure(load: () => Promise<ClientCommand>, args: string[]): Promise<number> {
  try {
    return await (await load())(args);
  } catch (error) {
    if (error instanceof UsageError) throw error;
    const [{ describeError }, { warn }] = await Promise.all([import("./errors.js"), import("./output.js")]);
    warn(describeError(error));
    return 1;
  }
}

export const CLIENT_USAGE = `Client commands (HANDOFF_URL, default http://127.0.0.1:8080, and HANDOFF_API_KEY):
  identity new --agent SLUG --out FILE [--name N] [--no-register]
                                          make an agent's key pairs into FILE (0600) and register it
  send --identity FILE --to RECIPIENT [--account A] [--message M] [--max-downloads N]
       [--expires-in 24h] [--plain] [--accept-rotation] PATH...
                                          encrypt, sign and send files; prints the transfer
  receive TRANSFER_ID --identity FILE [--out DIR] [--shield LEVEL] [--accept-rotation]
                                          download, verify, decrypt and scan into DIR (default .);
                                          exit 3 when Shield blocked a file
  inbox --identity FILE [--wait SECONDS]  the agent's inbox (long-poll up to 30 s)
  listen --identity FILE --out DIR [--shield LEVEL]
                                          receive each new transfer until SIGINT/SIGTERM
  mcp --identity FILE [--shield LEVEL] [--downloads DIR]
                                          the MCP server over stdio
  history transfer|agent ID               a transfer's or an agent's history, in log order
  audit [--from T] [--to T] [--type TYPE]...
                                          the account's audit feed (every page), from ≤ at < to
  report --month YYYY-MM [--csv]          the account's compliance report for a month
  Shield levels: off, permissive, standard (default), strict, paranoid. --accept-rotation takes
  a peer's changed keys instead of refusing them (keys are pinned on first use).`;
