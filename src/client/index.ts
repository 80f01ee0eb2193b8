import { identityNew } from "./commands/identity.js";
import { inbox } from "./commands/inbox.js";
import { listen } from "./commands/listen.js";
import { mcp } from "./commands/mcp.js";
import { receive } from "./commands/receive.js";
import { send } from "./commands/send.js";

/** A client command: runs with the arguments after its name and answers the process exit code. */
export type ClientCommand = (args: string[]) => Promise<number>;

const COMMANDS: { words: string[]; run: ClientCommand }[] = [
  { words: ["identity", "new"], run: identityNew },
  { words: ["send"], run: send },
  { words: ["receive"], run: receive },
  { words: ["inbox"], run: inbox },
  { words: ["listen"], run: listen },
  { words: ["mcp"], run: mcp },
];

/** The client command `argv` names, with the arguments that follow its name; null for any other. */
export function clientCommand(argv: string[]): { run: ClientCommand; args: string[] } | null {
  const match = COMMANDS.find(({ words }) => words.every((word, i) => argv[i] === word));
  return match ? { run: match.run, args: argv.slice(match.words.length) } : null;
}

export const CLIENT_USAGE = `Client commands (HANDOFF_URL, default http://127.0.0.1:8080, and HANDOFF_API_KEY):
  identity new --agent SLUG --out FILE [--name N] [--no-register]
                                          make an agent's key pairs into FILE (0600) and register it
  send --identity FILE --to RECIPIENT [--account A] [--message M] [--max-downloads N]
       [--expires-in 24h] [--plain] PATH...
                                          encrypt, sign and send files; prints the transfer
  receive TRANSFER_ID --identity FILE [--out DIR] [--shield LEVEL]
                                          download, verify, decrypt and scan into DIR (default .);
                                          exit 3 when Shield blocked a file
  inbox --identity FILE [--wait SECONDS]  the agent's inbox (long-poll up to 30 s)
  listen --identity FILE --out DIR [--shield LEVEL]
                                          receive each new transfer until SIGINT/SIGTERM
  mcp --identity FILE [--shield LEVEL] [--downloads DIR]
                                          the MCP server over stdio
  Shield levels: off, permissive, standard (default), strict, paranoid.`;
