import { type Command, Option } from "commander";
import { UsageError } from "../cli-errors.js";

/**
 * A client command: runs with its parsed options and its positional arguments, and answers the
 * process exit code.
 */
// biome-ignore lint/suspicious/noExplicitAny: each command types its own options; commander's are untyped.
export type ClientCommand = (options: any, args: string[]) => Promise<number>;

/** Ends a client command with its exit code once stdout has taken everything written to it. */
async function exitWith(code: number): Promise<never> {
  await new Promise<void>((done) => process.stdout.write("", () => done()));
  process.exit(code);
}

/**
 * Runs a command; a failure other than a usage error is one stderr line and exit code 1, or 5 when
 * verifiable custody failed (decisions 9.6: a key the log does not back, a forked log).
 */
async function runReportingFailure(load: () => Promise<ClientCommand>, command: Command): Promise<void> {
  let code: number;
  try {
    code = await (await load())(command.opts(), command.args);
  } catch (error) {
    if (error instanceof UsageError) throw error;
    const [{ describeError, exitCodeOf }, { warn }] = await Promise.all([
      import("./errors.js"),
      import("./output.js"),
    ]);
    warn(describeError(error));
    code = exitCodeOf(error);
  }
  await exitWith(code);
}

/** The action of a command whose module loads only when it runs (the MCP server's dependencies are not small). */
const runs =
  (load: () => Promise<ClientCommand>) =>
  (...args: unknown[]) =>
    runReportingFailure(load, args.at(-1) as Command);

const SHIELD_LEVELS = "off, permissive, standard (default), strict, paranoid";
const json = () => new Option("--json", "print the API's JSON instead of a table");
const yes = () =>
  new Option("-y, --yes", "do it without asking (needed when there is no terminal to ask on)");

const ENVIRONMENT = `
Environment:
  HANDOFF_URL      the server (default http://127.0.0.1:8080)
  HANDOFF_API_KEY  the account's API key (or a session token)`;

/**
 * The client commands (decisions 5.5 and the account's noun-verb commands), added to `program` in
 * the order `handoff help` lists them.
 */
export function addClientCommands(program: Command): void {
  addIdentityCommand(program);
  addSendCommand(program);
  addReceivingCommands(program);
  addMcpCommand(program);
  addHistoryCommands(program);
  addWhoamiCommand(program);
  addAgentsCommands(program);
  addWebhookCommands(program);
  addTransfersCommands(program);
  addLogCommands(program);
  addKeysCommands(program);
  addConnectionsCommands(program);
  addRequestCommands(program);
}

/** `handoff identity new`: an agent's key pairs, made and registered. */
function addIdentityCommand(program: Command): void {
  program
    .command("identity")
    .description("an agent's key pairs")
    .command("new")
    .description("make an agent's X25519 and Ed25519 key pairs into FILE (0600) and register the agent")
    .usage("--agent SLUG --out FILE [options]")
    .option("--agent <SLUG>", "the agent's id (slug) on the account")
    .option("--out <FILE>", "where the keys go; an existing FILE is refused")
    .option("--name <N>", "the agent's display name")
    .option("--no-register", "only make the file; register nothing (needs no API key)")
    .option(
      "--keep-existing",
      "when FILE already holds SLUG's keys, keep it (registering it if needed): safe to run twice",
    )
    .addHelpText("after", ENVIRONMENT)
    .action(runs(async () => (await import("./commands/identity.js")).identityNew));
}

/** `handoff send`: encrypt, sign and send (decisions 5.5), or finish an interrupted send. */
function addSendCommand(program: Command): void {
  program
    .command("send")
    .description("encrypt, sign and send files to an agent or a person; prints the transfer")
    .usage(
      "--identity FILE --to RECIPIENT [options] PATH... | --to-request URL PATH... | --resume TRANSFER_ID --identity FILE",
    )
    .argument("[PATH...]", "the files and folders to send")
    .option("--identity <FILE>", "the sending agent's identity file")
    .option("--to <RECIPIENT>", "an agent slug or a person's e-mail address")
    .option(
      "--to-request <URL>",
      "answer a request link (…/r/hrq_…): encrypted to its agent's key once the log proves it; no account needed",
    )
    .option("--sender-name <N>", "with --to-request: your name, shown to the agent as unverified")
    .option("--sender-email <E>", "with --to-request: your e-mail address, shown to the agent as unverified")
    .option("--account <A>", "the recipient's account (e-mail, UUID or name) when the slug is ambiguous")
    .option("--message <M>", "a message that goes with the files")
    .option("--max-downloads <N>", "downloads allowed, 1 to 1000 (default 10)")
    .option("--expires-in <DURATION>", "1h, 12h, 24h, 7d, 14d, 30d or 90d, within the plan's retention")
    .option("--plain", "send unencrypted (the server can read the files; a warning says so)")
    .option("--accept-rotation", "take the recipient's changed keys instead of refusing them")
    .option(
      "--resume <TRANSFER_ID>",
      "finish a send that was interrupted, from its state beside the identity file (FILE.sends/)",
    )
    .addHelpText("after", ENVIRONMENT)
    .action(runs(async () => (await import("./commands/send.js")).send));
}

/** The commands that take what reaches an agent: `receive`, `inbox`, `listen`. */
function addReceivingCommands(program: Command): void {
  program
    .command("receive")
    .description("download, verify, decrypt and scan a transfer into DIR; exit 3 when Shield blocked a file")
    .usage("TRANSFER_ID --identity FILE [options]")
    .argument("<TRANSFER_ID>", "the transfer (tr_…)")
    .option("--identity <FILE>", "the receiving agent's identity file")
    .option("--out <DIR>", "where the files go (default .)")
    .option("--shield <LEVEL>", `how strictly to scan: ${SHIELD_LEVELS}`)
    .option("--accept-rotation", "take the sender's changed keys instead of refusing them")
    .option("--no-receipt", "post no signed receipt of what was received (decisions 9.5)")
    .addHelpText("after", ENVIRONMENT)
    .action(runs(async () => (await import("./commands/receive.js")).receive));

  program
    .command("inbox")
    .description("the agent's inbox as JSON")
    .usage("--identity FILE [--wait SECONDS]")
    .option("--identity <FILE>", "the agent's identity file")
    .option("--wait <SECONDS>", "long-poll up to 30 s for something new")
    .addHelpText("after", ENVIRONMENT)
    .action(runs(async () => (await import("./commands/inbox.js")).inbox));

  program
    .command("listen")
    .description("receive each new transfer into DIR as it arrives, until SIGINT/SIGTERM")
    .usage("--identity FILE --out DIR [--shield LEVEL]")
    .option("--identity <FILE>", "the agent's identity file")
    .option("--out <DIR>", "where the files go")
    .option("--shield <LEVEL>", `how strictly to scan: ${SHIELD_LEVELS}`)
    .addHelpText("after", ENVIRONMENT)
    .action(runs(async () => (await import("./commands/listen.js")).listen));
}

/** `handoff mcp`: the MCP server over stdio. */
function addMcpCommand(program: Command): void {
  program
    .command("mcp")
    .description("the MCP server over stdio, as the agent of FILE")
    .usage("--identity FILE [--shield LEVEL] [--downloads DIR]")
    .option("--identity <FILE>", "the agent's identity file")
    .option("--shield <LEVEL>", `how strictly to scan downloads: ${SHIELD_LEVELS}`)
    .option("--downloads <DIR>", "the default download folder (default ./handoff-downloads)")
    .addHelpText("after", ENVIRONMENT)
    .action(runs(async () => (await import("./commands/mcp.js")).mcp));
}

/** What the log shows: a transfer's or an agent's `history`, the account's `audit` feed and its monthly `report`. */
function addHistoryCommands(program: Command): void {
  program
    .command("history")
    .description("a transfer's or an agent's history, in log order")
    .usage("transfer|agent ID")
    .argument("[WHAT...]", "transfer TRANSFER_ID, or agent AGENT_UUID")
    .addHelpText("after", ENVIRONMENT)
    .action(runs(async () => (await import("./commands/history.js")).history));

  program
    .command("audit")
    .description("the account's audit feed (every page), from ≤ at < to")
    .option("--from <TIME>", "ISO time, inclusive")
    .option("--to <TIME>", "ISO time, exclusive")
    .option(
      "--type <TYPE>",
      "only events of this type (repeat for more)",
      (value, previous: string[] = []) => [...previous, value],
    )
    .addHelpText("after", ENVIRONMENT)
    .action(runs(async () => (await import("./commands/history.js")).audit));

  program
    .command("report")
    .description("the account's compliance report for a month")
    .usage("--month YYYY-MM [--csv]")
    .option("--month <YYYY-MM>", "the month")
    .option("--csv", "as metric,value rows instead of JSON")
    .addHelpText("after", ENVIRONMENT)
    .action(runs(async () => (await import("./commands/history.js")).report));
}

/** `handoff whoami`: the account behind HANDOFF_API_KEY. */
function addWhoamiCommand(program: Command): void {
  program
    .command("whoami")
    .description("whose API key HANDOFF_API_KEY is: the account, its plan and its limits")
    .addOption(json())
    .addHelpText("after", ENVIRONMENT)
    .action(runs(async () => (await import("./commands/account.js")).whoami));
}

/** `handoff agents list|get|update|delete`. */
function addAgentsCommands(program: Command): void {
  const agents = program.command("agents").description("the account's agents");
  agents
    .command("list")
    .description("every agent of the account")
    .addOption(json())
    .action(runs(async () => (await import("./commands/agents.js")).agentsList));
  agents
    .command("get")
    .description("one agent, with its public keys, as JSON")
    .argument("<AGENT>", "its slug or UUID")
    .action(runs(async () => (await import("./commands/agents.js")).agentsGet));
  agents
    .command("update")
    .description("change an agent's profile (keys never change: delete and register again to rotate)")
    .argument("<AGENT>", "its slug or UUID")
    .option("--name <N>", "display name")
    .option("--description <D>", "description (empty clears it)")
    .option("--agent-type <T>", "e.g. crewai, langgraph, custom")
    .option("--webhook-url <URL>", "https:// URL for push delivery (empty clears it)")
    .option("--metadata <JSON>", 'a JSON object, e.g. \'{"team":"ops"}\'')
    .action(runs(async () => (await import("./commands/agents.js")).agentsUpdate));
  agents
    .command("delete")
    .description("disconnect an agent: it can no longer send or receive, and its slug is free again")
    .argument("<AGENT>", "its slug or UUID")
    .addOption(yes())
    .action(runs(async () => (await import("./commands/agents.js")).agentsDelete));
}

/** `handoff webhook set|test|deliveries`. */
function addWebhookCommands(program: Command): void {
  const webhook = program
    .command("webhook")
    .description("an agent's signed push delivery (docs/webhooks.md)");
  webhook
    .command("set")
    .description(
      "set an agent's https:// endpoint (an empty URL clears it); the first prints its secret once",
    )
    .argument("<AGENT>", "its slug or UUID")
    .argument("<URL>", "the receiver's URL")
    .action(runs(async () => (await import("./commands/webhooks.js")).webhookSet));
  webhook
    .command("test")
    .description("send a webhook.test message to the agent's endpoint")
    .argument("<AGENT>", "its slug or UUID")
    .action(runs(async () => (await import("./commands/webhooks.js")).webhookTest));
  webhook
    .command("deliveries")
    .description("the agent's webhook messages, newest first, with their attempts")
    .argument("<AGENT>", "its slug or UUID")
    .option("--limit <N>", "at most N, 1 to 100 (default 20)")
    .addOption(json())
    .action(runs(async () => (await import("./commands/webhooks.js")).webhookDeliveries));
}

/** `handoff transfers list|get|delete`. */
function addTransfersCommands(program: Command): void {
  const transfers = program.command("transfers").description("transfers the account sent or received");
  transfers
    .command("list")
    .description("transfers, newest first")
    .option("--direction <D>", "sent or received (default both)")
    .option("--status <S>", "pending, pending_recipient, active, downloaded or expired")
    .option("--limit <N>", "at most N, 1 to 100 (default 20)")
    .option("--offset <N>", "skip the first N")
    .addOption(json())
    .action(runs(async () => (await import("./commands/transfers.js")).transfersList));
  transfers
    .command("get")
    .description("a transfer's status and metadata, as JSON (never counts a download)")
    .argument("<ID>", "the transfer (tr_…)")
    .action(runs(async () => (await import("./commands/transfers.js")).transfersGet));
  transfers
    .command("delete")
    .description("delete a transfer: its files go at once, its history stays")
    .argument("<ID>", "the transfer (tr_…)")
    .addOption(yes())
    .action(runs(async () => (await import("./commands/transfers.js")).transfersDelete));
}

/** `handoff log verify|witness`: the transparency log checked from outside (decisions 9). */
function addLogCommands(program: Command): void {
  const log =
    program.commands.find((command) => command.name() === "log") ??
    program.command("log").description("the transparency log (decisions 9)");
  log
    .command("verify")
    .description(
      "check an audit export offline: the checkpoint, every proof, receipts, no gaps; exit 5 if not",
    )
    .usage("FILE [--vkey VKEY]")
    .argument("<FILE>", "the NDJSON of GET /v1/audit/export")
    .option("--vkey <VKEY>", "the log's verifier key (default: the one pinned beside --identity)")
    .option("--identity <FILE>", "an identity whose pinned log key to use")
    .action(runs(async () => (await import("./commands/log.js")).logVerify));
  log
    .command("witness")
    .description("fetch the newest checkpoint, check it extends the one kept in DIR, keep it; exit 5 if not")
    .usage("--state DIR")
    .option("--state <DIR>", "where the witness keeps the log key and the newest checkpoint")
    .addHelpText("after", ENVIRONMENT)
    .action(runs(async () => (await import("./commands/log.js")).logWitness));
}

/** `handoff keys list|create|revoke`. */
function addKeysCommands(program: Command): void {
  const keys = program.command("keys").description("the account's API keys");
  keys
    .command("list")
    .description("the API keys in use (never the keys themselves)")
    .addOption(json())
    .action(runs(async () => (await import("./commands/keys.js")).keysList));
  keys
    .command("create")
    .description("a new API key, printed once as JSON")
    .usage("--name N")
    .option("--name <N>", "what the key is for, e.g. ci")
    .action(runs(async () => (await import("./commands/keys.js")).keysCreate));
  keys
    .command("revoke")
    .description("revoke an API key: its next use answers 401")
    .argument("<KEY_ID>", "the key's id (handoff keys list)")
    .addOption(yes())
    .action(runs(async () => (await import("./commands/keys.js")).keysRevoke));
}

/** `handoff connections list|invite|accept|decline|remove`. */
function addConnectionsCommands(program: Command): void {
  const connections = program
    .command("connections")
    .description("connections with other accounts, whose agents you can then send to");
  connections
    .command("list")
    .description("the account's connections, newest first")
    .addOption(json())
    .action(runs(async () => (await import("./commands/connections.js")).connectionsList));
  connections
    .command("invite")
    .description("invite another account to connect")
    .argument("<ACCOUNT>", "its e-mail address or UUID")
    .action(runs(async () => (await import("./commands/connections.js")).connectionsInvite));
  connections
    .command("accept")
    .description("accept an invitation this account received")
    .argument("<ID>", "the connection (handoff connections list)")
    .action(runs(async () => (await import("./commands/connections.js")).connectionsAccept));
  connections
    .command("decline")
    .description("decline an invitation this account received")
    .argument("<ID>", "the connection")
    .action(runs(async () => (await import("./commands/connections.js")).connectionsDecline));
  connections
    .command("remove")
    .description("end a connection, from either side")
    .argument("<ID>", "the connection")
    .addOption(yes())
    .action(runs(async () => (await import("./commands/connections.js")).connectionsRemove));
}

/** `handoff request create|list|revoke`: links anyone can send an agent files through (decisions 10). */
function addRequestCommands(program: Command): void {
  const request = program
    .command("request")
    .description("request links: anyone holding one can send an agent files, encrypted to its key");
  request
    .command("create")
    .description("a request link to the agent of FILE; prints the link (shown this once)")
    .usage("--identity FILE --title T [options]")
    .option("--identity <FILE>", "the receiving agent's identity file")
    .option("--title <T>", "what the link asks for, 1 to 200 characters")
    .option("--message <M>", "more words for the sender, up to 2,000 characters")
    .option("--max-files <N>", "files a send may hold, 1 to 1000 (default 10)")
    .option(
      "--max-size <SIZE>",
      "bytes all files may take, e.g. 50MiB (default the plan's maximum file size)",
    )
    .option(
      "--expires-in <DURATION>",
      "1h, 12h, 24h, 7d (default), 14d, 30d or 90d, within the plan's retention",
    )
    .option("--uses <N>", "sends the link takes, 1 to 1000 (default 1)")
    .option("--ask-name", "ask the sender for their name")
    .option("--ask-email", "ask the sender for their e-mail address")
    .addOption(new Option("--json", "print the API's JSON (with the link's id) instead of the link"))
    .addHelpText("after", ENVIRONMENT)
    .action(runs(async () => (await import("./commands/requests.js")).requestCreate));
  request
    .command("list")
    .description("the account's request links, newest first (never their tokens)")
    .addOption(json())
    .action(runs(async () => (await import("./commands/requests.js")).requestList));
  request
    .command("revoke")
    .description("revoke a request link: it answers 410 from now on")
    .argument("<ID>", "the link's id (handoff request list)")
    .addOption(yes())
    .action(runs(async () => (await import("./commands/requests.js")).requestRevoke));
}
