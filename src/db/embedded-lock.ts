import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { processRuns } from "../process-runs.js";

/** Who holds an embedded data folder, as its lock file says. */
export interface LockOwner {
  pid: number;
  /** The command line that opened it: `handoff serve`, `handoff accounts create`, … */
  command: string;
  since: string;
  /** Where the holder answers HTTP, once it is a listening server. */
  url?: string;
}

/** Another live process has the embedded data folder open: this one must not write to it. */
export class EmbeddedStoreBusyError extends Error {
  constructor(
    readonly directory: string,
    readonly owner: LockOwner,
  ) {
    super(
      `the embedded data folder ${directory} is in use by ${describeOwner(owner)}; ` +
        "stop it first, or work through its API (two processes writing one embedded database would diverge silently)",
    );
    this.name = "EmbeddedStoreBusyError";
  }
}

const describeOwner = (owner: LockOwner) =>
  `${owner.command} (pid ${owner.pid}${owner.url ? `, ${owner.url}` : ""}, since ${owner.since})`;

/** Beside the data folder, not in it: PGlite's initdb wants an empty folder. */
const lockFileOf = (directory: string) => `${directory}.lock`;

/** The locks this process holds, so a server can add the address it listens on to them. */
const held = new Set<EmbeddedLock>();

/**
 * The one-writer lock of an embedded (PGlite) data folder. PGlite itself takes no lock: a second
 * process opening the same folder would write a database of its own beside the first's and lose
 * its writes. The lock file names its holder; one left by a process that no longer runs (a crash,
 * kill -9) is taken over.
 */
export class EmbeddedLock {
  private owner: LockOwner;

  private constructor(
    private readonly path: string,
    owner: LockOwner,
  ) {
    this.owner = owner;
  }

  /** Takes the lock of `directory`, or throws EmbeddedStoreBusyError naming the live holder. */
  static acquire(directory: string): EmbeddedLock {
    const path = lockFileOf(directory);
    const owner: LockOwner = { pid: process.pid, command: commandLine(), since: new Date().toISOString() };
    for (let attempt = 0; ; attempt++) {
      try {
        writeFileSync(path, JSON.stringify(owner), { flag: "wx", mode: 0o644 });
        const lock = new EmbeddedLock(path, owner);
        held.add(lock);
        return lock;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "EEXIST" || attempt > 0) throw error;
      }
      const holder = readOwner(path);
      if (holder && processRuns(holder.pid)) throw new EmbeddedStoreBusyError(directory, holder);
      // Left by a process that is gone: take it over.
      rmSync(path, { force: true });
    }
  }

  /** Adds the address this process answers on, so a second process can be sent there. */
  announce(url: string): void {
    this.owner = { ...this.owner, url };
    writeFileSync(this.path, JSON.stringify(this.owner));
  }

  release(): void {
    if (!held.delete(this)) return;
    if (readOwner(this.path)?.pid === process.pid) rmSync(this.path, { force: true });
  }
}

/** Records where this process's HTTP server listens in every embedded lock it holds. */
export function announceServerUrl(url: string): void {
  for (const lock of held) lock.announce(url);
}

/** The live holder of `directory`'s lock, or null when nobody (still running) holds it. */
export function embeddedStoreOwner(directory: string): LockOwner | null {
  const holder = readOwner(lockFileOf(directory));
  return holder && processRuns(holder.pid) ? holder : null;
}

function readOwner(path: string): LockOwner | null {
  try {
    const owner = JSON.parse(readFileSync(path, "utf8")) as LockOwner;
    return Number.isSafeInteger(owner.pid) ? owner : null;
  } catch {
    return null;
  }
}

/** `handoff serve`, whatever script path started it. */
function commandLine(): string {
  const args = process.argv.slice(2).filter((arg) => !arg.startsWith("-"));
  return `handoff ${args.slice(0, 2).join(" ")}`.trim();
}
