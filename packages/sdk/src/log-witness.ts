import { readFile } from "node:fs/promises";
import { HandoffCustodyError, HandoffError } from "./errors.js";
import type { Transport } from "./http.js";
import { writePrivateFile } from "./private-file.js";
import {
  type AnsweredKeys,
  type Checkpoint,
  type KeyProof,
  type LogState,
  LogView,
  LogViewError,
  requireProvenKeys,
} from "./transparency/index.js";

/** `agent.json` → `agent.log.json`: the log's pin lives beside the identity that saw it, as its pins do. */
export function defaultLogPath(identityPath: string): string {
  return `${identityPath.replace(/\.json$/i, "")}.log.json`;
}

/**
 * The Node client's view of the transparency log (the core's LogView): its state in a JSON file
 * (mode 0600) when a path is given, else for the client's lifetime; its questions through the
 * client's transport, to the client's service, or to `service` (a base URL) with no credential.
 * Refusals are HandoffCustodyError.
 */
export class LogWitness {
  private memory: LogState | null = null;
  private readonly view: LogView;

  constructor(transport: Transport, path: string | null, service?: string) {
    // An absolute URL carries no credential (Transport): the client's API key stays with its own service.
    const at = (route: string) => (service ? `${service}${route}` : route);
    this.view = new LogView({
      load: async () => (path ? readState(path) : this.memory),
      save: async (state) => {
        this.memory = state;
        if (path) await writePrivateFile(path, `${JSON.stringify(state, null, 2)}\n`);
      },
      fetchVerifierKey: async () =>
        (await transport.json<{ vkey: string }>({ method: "GET", url: at("/v1/log/key"), idempotent: true }))
          .vkey,
      fetchConsistency: async (from, to) =>
        (
          await transport.json<{ proof: string[] }>({
            method: "GET",
            url: at("/v1/log/proof/consistency"),
            idempotent: true,
            query: { from, to },
          })
        ).proof,
    });
  }

  /** The keys answered for `agent`, proven by the log (requireProvenKeys); HandoffCustodyError otherwise. */
  requireProvenKeys(agent: string, keys: AnsweredKeys, proof: KeyProof | null | undefined): Promise<void> {
    return custody(() => requireProvenKeys(this.view, agent, keys, proof));
  }

  observe(note: string): Promise<Checkpoint> {
    return custody(() => this.view.observe(note));
  }
}

async function custody<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof LogViewError)
      throw new HandoffCustodyError(error.code, error.message, { cause: error });
    throw error;
  }
}

async function readState(path: string): Promise<LogState | null> {
  try {
    return JSON.parse(await readFile(path, "utf8")) as LogState;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw new HandoffError("INVALID_LOG_STATE", `${path} cannot be read: ${(error as Error).message}`);
  }
}
