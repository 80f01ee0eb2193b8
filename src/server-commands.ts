import type { Command } from "commander";

/**
 * The server's commands. Their modules load only when one runs: a client command never pays for
 * the server's modules, and `--help` loads nothing.
 */
const serverCli = () => import("./server-cli.js");

const ENVIRONMENT = `
Configuration: the server's environment variables (README.md, Configuration), DATA_DIR first.`;

export function addServerCommands(program: Command): void {
  program
    .command("serve")
    .description("run the HTTP server, the web app and the API docs (configured by environment variables)")
    .addHelpText("after", ENVIRONMENT)
    .action(async () => (await serverCli()).serve());

  const accounts = program.command("accounts").description("accounts, as the operator (no server needed)");
  accounts
    .command("create")
    .description("create an account and its first API key, printed as JSON or written to FILE")
    .usage("--email E [--name N] [--plan P] [--out FILE [--keep-existing]]")
    .option("--email <E>", "the account's e-mail address")
    .option("--name <N>", "its display name (default: from the address)")
    .option("--plan <P>", "free (default), builder, team, scale or enterprise")
    .option("--out <FILE>", "write the account and its API key to FILE (mode 0600, never over a file)")
    .option("--keep-existing", "when FILE already holds this account, keep it and exit 0: safe to run twice")
    .addHelpText("after", ENVIRONMENT)
    .action(async (options) => (await serverCli()).accountsCreate(options));
  accounts
    .command("plan")
    .description("move an account to another plan (its limits change at once)")
    .usage("--email E --plan P")
    .option("--email <E>", "the account's e-mail address")
    .option("--plan <P>", "free, builder, team, scale or enterprise")
    .addHelpText("after", ENVIRONMENT)
    .action(async (options) => (await serverCli()).accountsPlan(options));

  program
    .command("projections")
    .description("the read models")
    .command("rebuild")
    .description(
      "rebuild read models from the event log beside the live ones, then switch them in (all when no name is given)",
    )
    .argument("[NAME...]", "projections to rebuild")
    .addHelpText("after", ENVIRONMENT)
    .action(async (names: string[]) => (await serverCli()).projectionsRebuild(names));

  program
    .command("replay")
    .description("build the read models as they were at POSITION into a scratch schema or data folder")
    .usage("--until POSITION")
    .option("--until <POSITION>", "a position from history or the audit feed")
    .addHelpText("after", ENVIRONMENT)
    .action(async (options) => (await serverCli()).replay(options));

  program
    .command("log")
    .description("the transparency log (decisions 9)")
    .command("check")
    .description(
      "recompute the log's Merkle tree from the stored events and compare it with every signed checkpoint",
    )
    .addHelpText("after", ENVIRONMENT)
    .action(async () => (await serverCli()).logCheck());

  program
    .command("outbox")
    .description("the e-mail the server wrote to DATA_DIR/outbox (no SMTP), with its links decoded")
    .option("--to <ADDRESS>", "only e-mail to this address")
    .option("--type <TYPE>", "only this type: verify, invite, nudge, files-ready, …")
    .option("--json", "as JSON")
    .addHelpText("after", ENVIRONMENT)
    .action(async (options) => (await import("./outbox-cli.js")).outbox(options));
}
