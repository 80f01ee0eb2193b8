import { spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Command } from "commander";
import { afterAll, describe, expect, it } from "vitest";
import { handoffProgram } from "../../src/cli-program.js";
import { HANDOFF_VERSION } from "../../src/version.js";
import { cliAnywhere, ROOT, tempDir } from "./support.js";

/** Every command path of the tree: ["serve"], ["agents"], ["agents", "list"], … */
function commandPaths(command: Command, path: string[] = []): string[][] {
  return command.commands
    .filter((sub) => sub.name() !== "help")
    .flatMap((sub) => [[...path, sub.name()], ...commandPaths(sub, [...path, sub.name()])]);
}

/** `handoff ARGS` in an empty folder, with a data folder of its own and no client settings. */
async function run(args: string[], cwd: string, dataDir: string) {
  const { HANDOFF_URL: _u, HANDOFF_API_KEY: _k, ...env } = process.env;
  const child = spawn(process.execPath, [...cliAnywhere(), ...args], {
    cwd,
    env: { ...env, DATA_DIR: dataDir, HANDOFF_URL: "http://127.0.0.1:9", PORT: "0" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => {
    stdout += chunk.toString("utf8");
  });
  child.stderr.on("data", (chunk: Buffer) => {
    stderr += chunk.toString("utf8");
  });
  const killer = setTimeout(() => child.kill("SIGKILL"), 60_000);
  const [status] = (await once(child, "close")) as [number | null];
  clearTimeout(killer);
  return { status, stdout, stderr };
}

/** Runs `work` over `items`, `width` at a time. */
async function inBatches<T, R>(items: T[], width: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = [];
  for (let i = 0; i < items.length; i += width)
    results.push(...(await Promise.all(items.slice(i, i + width).map(work))));
  return results;
}

describe("handoff --help, --version and completion", () => {
  const cwd = tempDir("handoff-help-cwd-");
  const data = tempDir("handoff-help-data-");
  afterAll(() => {
    cwd.remove();
    data.remove();
  });

  const paths = commandPaths(handoffProgram());

  it("covers every command the README and decisions 5.5 name", () => {
    const names = paths.map((path) => path.join(" "));
    for (const expected of [
      "serve",
      "accounts create",
      "accounts plan",
      "projections rebuild",
      "replay",
      "outbox",
      "identity new",
      "send",
      "receive",
      "inbox",
      "listen",
      "mcp",
      "history",
      "audit",
      "report",
      "whoami",
      "agents list",
      "agents get",
      "agents update",
      "agents delete",
      "webhook set",
      "webhook test",
      "webhook deliveries",
      "transfers list",
      "transfers get",
      "transfers delete",
      "keys list",
      "keys create",
      "keys revoke",
      "connections list",
      "connections invite",
      "connections accept",
      "connections decline",
      "connections remove",
      "request create",
      "request list",
      "request revoke",
      "completion",
    ])
      expect(names).toContain(expected);
  });

  it("every command and subcommand answers --help with its usage on stdout, exit 0, and does nothing else", async () => {
    const results = await inBatches(paths, 4, async (path) => ({
      path,
      ...(await run([...path, "--help"], cwd.path, data.path)),
    }));
    for (const { path, status, stdout, stderr } of results) {
      const name = path.join(" ");
      expect(status, `${name} --help: ${stderr}`).toBe(0);
      expect(stderr, name).toBe("");
      expect(stdout, name).toContain(`Usage: handoff ${name}`);
    }
    // Nothing ran: no data folder content (serve, accounts create, replay…), no file in the working folder.
    expect(readdirSync(data.path)).toEqual([]);
    expect(readdirSync(cwd.path)).toEqual([]);
  }, 600_000);

  it("--version prints the package's version; help and no command list the commands", async () => {
    const version = await run(["--version"], cwd.path, data.path);
    expect(version).toMatchObject({ status: 0, stdout: `${HANDOFF_VERSION}\n`, stderr: "" });
    expect(JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")).version).toBe(HANDOFF_VERSION);

    const help = await run(["help"], cwd.path, data.path);
    expect(help.status).toBe(0);
    expect(help.stdout).toContain("Client commands:");
    expect(help.stdout).toContain("connections");
    const helpOf = await run(["help", "send"], cwd.path, data.path);
    expect(helpOf.stdout).toContain("Usage: handoff send");

    const bare = await run([], cwd.path, data.path);
    expect(bare.status).toBe(1);
    expect(bare.stderr).toContain("Server commands:");
  });

  it("a refused command line is one stderr line naming the cause and where the usage is", async () => {
    const unknownOption = await run(["send", "--bogus"], cwd.path, data.path);
    expect(unknownOption.status).toBe(1);
    expect(unknownOption.stderr).toBe(
      "error: unknown option '--bogus' (handoff send --help shows its usage)\n",
    );
    const unknownCommand = await run(["agents", "lst"], cwd.path, data.path);
    expect(unknownCommand.status).toBe(1);
    expect(unknownCommand.stderr.trim().split("\n")).toHaveLength(1);
    expect(unknownCommand.stderr).toContain("(Did you mean list?)");
    expect(unknownCommand.stderr).toContain("handoff agents --help");
  });

  /** The words `shell` offers after `words` (the last one being typed), in an empty folder. */
  async function offered(shell: "bash" | "fish", words: string[]): Promise<string[]> {
    const printed = await run(["completion", shell], cwd.path, data.path);
    expect(printed.status, printed.stderr).toBe(0);
    const script = join(data.path, `completion.${shell}`);
    writeFileSync(script, printed.stdout);
    const line =
      shell === "bash"
        ? `source '${script}'; COMP_WORDS=(${words.map((w) => `'${w}'`).join(" ")}); COMP_CWORD=${words.length - 1}; _handoff_complete; printf '%s\\n' "\${COMPREPLY[@]}"`
        : `source '${script}'; complete -C '${words.join(" ")}'`;
    const child = spawn(shell, ["-c", line], { cwd: cwd.path, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString("utf8");
    });
    await once(child, "close");
    return out.trim().split("\n").filter(Boolean);
  }

  async function expectCompletes(shell: "bash" | "fish") {
    expect(await offered(shell, ["handoff", "ag"])).toEqual(["agents"]);
    expect(await offered(shell, ["handoff", "agents", ""])).toEqual(
      expect.arrayContaining(["list", "get", "update", "delete"]),
    );
    expect(await offered(shell, ["handoff", "send", "--ident"])).toEqual(["--identity"]);
    expect(await offered(shell, ["handoff", "transfers", "list", "--dir"])).toEqual(["--direction"]);
  }

  it("prints a bash/zsh completion script that completes commands, subcommands and options", () =>
    expectCompletes("bash"));

  const fishMissing = spawnSync("fish", ["--version"]).status !== 0;
  it.skipIf(fishMissing)(
    `prints a fish completion script that completes the same${fishMissing ? " (skipped: no fish on PATH)" : ""}`,
    () => expectCompletes("fish"),
  );

  it("names the shells it knows when asked for another", async () => {
    const printed = await run(["completion", "tcsh"], cwd.path, data.path);
    expect(printed.status).toBe(1);
    expect(printed.stderr).toContain("no completion for the shell tcsh: bash, zsh or fish");
  });
});
