import { Command } from "commander";
import { UsageError } from "./cli-errors.js";
import { addClientCommands } from "./client/index.js";
import { addServerCommands } from "./server-commands.js";
import { HANDOFF_VERSION } from "./version.js";

/**
 * The `handoff` command: every command and subcommand is declared to one parser (commander), which
 * gives each its `--help` (printed without running anything, exit 0), checks its options and
 * arguments, and offers the whole tree to shell completion. What a command does loads only when it
 * runs.
 */
export function handoffProgram(): Command {
  const program = new Command("handoff")
    .description("Handoff: end-to-end encrypted file transfer for AI agents, and its server")
    .version(HANDOFF_VERSION, "-V, --version", "print the version")
    .helpOption("-h, --help", "show help for a command")
    .helpCommand("help [COMMAND]", "show help for a command")
    .addHelpText(
      "after",
      "\nEach command has its own --help. Client commands read HANDOFF_URL and HANDOFF_API_KEY; server commands, the server's environment variables (README.md, Configuration).",
    );
  program.commandsGroup("Server commands:");
  addServerCommands(program);
  program.commandsGroup("Client commands:");
  addClientCommands(program);
  program.commandsGroup("Shell:");
  program
    .command("completion")
    .description(
      "print a completion script: source <(handoff completion) in bash or zsh, handoff completion fish | source in fish",
    )
    .argument("[shell]", "bash (also zsh) or fish", "bash")
    .action(async (shell: string) => {
      const { bashCompletion, fishCompletion } = await import("./cli-completion.js");
      if (shell === "fish") process.stdout.write(fishCompletion(program));
      else if (shell === "bash" || shell === "zsh") process.stdout.write(bashCompletion(program));
      else throw new UsageError(`no completion for the shell ${shell}: bash, zsh or fish`);
    });
  oneLineErrors(program, "handoff");
  return program;
}

/**
 * A command line the parser refuses is one stderr line naming the cause, and the fix: that
 * command's --help (decisions 5.5: one clear line).
 */
function oneLineErrors(command: Command, path: string): void {
  command.configureOutput({
    outputError: (text, write) =>
      write(`${text.trim().replace(/\s*\n\s*/g, "; ")} (${path} --help shows its usage)\n`),
  });
  for (const sub of command.commands) oneLineErrors(sub, `${path} ${sub.name()}`);
}
