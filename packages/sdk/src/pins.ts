import { readFile } from "node:fs/promises";
import { HandoffCustodyError, HandoffError, HandoffKeyChangedError, type PinnedKeys } from "./errors.js";
import { writePrivateFile } from "./private-file.js";
import type { ResolvedAgent } from "./types.js";

type PinFile = Record<string, PinnedKeys>;

/** `agent.json` → `agent.pins.json`: pins live beside the identity they were seen by. */
export function defaultPinsPath(identityPath: string): string {
  return `${identityPath.replace(/\.json$/i, "")}.pins.json`;
}

/** One pin per agent, and per account when a disambiguator picked it (a slug is unique per account). */
export function pinName(agentId: string, account: string | undefined): string {
  return account ? `${agentId}@${account}` : agentId;
}

/**
 * Trust on first use for agents' keys: the first keys seen for an agent are remembered; later
 * answers with other keys are refused with KEY_CHANGED unless the caller accepts the rotation.
 * Kept in a JSON file (mode 0600) when a path is given, else for the client's lifetime only.
 */
export class PinStore {
  /** The pins when there is no file; with a file, it is read afresh each time (other processes write it too). */
  private readonly memory: PinFile = {};
  /** Serialises read-modify-write of the file within this process. */
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly path: string | null) {}

  /**
   * Checks `resolved` against its pin (pinning it if new) and returns it; throws KEY_CHANGED. Keys
   * that changed are taken only with `acceptRotation`; for an agent whose keys the transparency log
   * backs (`provenByLog`, decisions 9.6) only when their key_version is higher than the pinned one,
   * i.e. a rotation is on record: the same version with other keys is refused as not in the log.
   */
  check(
    name: string,
    resolved: ResolvedAgent,
    acceptRotation: boolean,
    provenByLog = false,
  ): Promise<ResolvedAgent> {
    const run = this.queue.then(() => this.checkNow(name, resolved, acceptRotation, provenByLog));
    this.queue = run.catch(() => undefined);
    return run;
  }

  private async checkNow(
    name: string,
    resolved: ResolvedAgent,
    acceptRotation: boolean,
    provenByLog: boolean,
  ) {
    if (resolved.public_key === null || resolved.key_version === null) {
      throw new HandoffError(
        "AGENT_NOT_CONNECTED",
        `agent '${resolved.agent_id}' has no public key yet (it is ${resolved.connection_status})`,
      );
    }
    const current: PinnedKeys = {
      public_key: resolved.public_key,
      signing_public_key: resolved.signing_public_key,
      key_version: resolved.key_version,
    };
    const pins = await this.load();
    const pinned = pins[name];
    const same =
      pinned?.public_key === current.public_key && pinned.signing_public_key === current.signing_public_key;
    if (pinned && !same && !acceptRotation) throw new HandoffKeyChangedError(name, pinned, current);
    if (pinned && !same && provenByLog && !(current.key_version > pinned.key_version)) {
      throw new HandoffCustodyError(
        "KEY_NOT_IN_LOG",
        `the keys of agent '${name}' changed without a rotation on record in the transparency log (key_version ${pinned.key_version} → ${current.key_version})`,
      );
    }
    if (!pinned || !same || pinned.key_version !== current.key_version) {
      pins[name] = current;
      await this.save(pins);
    }
    return resolved;
  }

  private async load(): Promise<PinFile> {
    if (!this.path) return this.memory;
    try {
      return JSON.parse(await readFile(this.path, "utf8")) as PinFile;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return {};
      throw new HandoffError(
        "INVALID_PINS",
        `pins file ${this.path} cannot be read: ${(error as Error).message}`,
      );
    }
  }

  private async save(pins: PinFile): Promise<void> {
    if (this.path) await writePrivateFile(this.path, `${JSON.stringify(pins, null, 2)}\n`);
  }
}
