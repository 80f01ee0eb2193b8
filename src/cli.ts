#!/usr/bin/env node
import { errorLine, UsageError } from "./cli-errors.js";
import { CLIENT_USAGE, clientCommand } from "./client/index.js";

/**
 * Modules load on demand: a client command never pays for the server's modules, and the server
 * never loads the client SDK.
 */
const serverCli = () => import("./server-cli.js");

async function usage(): Promise<string> {
  const { SERVER_USAGE } = await serverCli();
  return `usage: handoff <command>

${SERVER_USAGE}

${CLIENT_USAGE}

Configuration comes from environment variables (see README.md).`;
}

/** Ends a client command with its exit code once stdout has taken everything written to it. */
async function exitWith(code: number): Promise<never> {
  await new Promise<void>((done) => process.stdout.write("", () => done()));
  process.exit(code);
}

async function main(argv: string[]): Promise<void> {
  const [command, sub, ...rest] = argv;
  if (command === undefined || ["help", "--help", "-h"].includes(command)) {
    (command ? process.stdout : process.stderr).write(`${await usage()}\n`);
    return exitWith(command ? 0 : 1);
  }
  const client = clientCommand(argv);
  if (client) return exitWith(await client.run(client.args));
  if (command === "serve") return (await serverCli()).serve();
  if (command === "accounts" && sub === "create") return (await serverCli()).accountsCreate(rest);
  if (command === "projections" && sub === "rebuild") return (await serverCli()).projectionsRebuild(rest);
  if (command === "replay") return (await serverCli()).replay(argv.slice(1));
  throw new UsageError(`unknown command: ${argv.join(" ")}`);
}

main(process.argv.slice(2)).catch((error: unknown) => {
  console.error(
    error instanceof UsageError ? `${error.message} (handoff help lists the commands)` : errorLine(error),
  );
  process.exit(1);
});
