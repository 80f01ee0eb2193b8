import { type KeyProof, type LogState, LogView, requireProvenKeys } from "@handoff/sdk/transparency";
import type { ResolvedAgent } from "@handoff/sdk/types";
import { api } from "./api.js";

/** Where this browser keeps the log key it pinned at first use and the newest checkpoint it saw. */
const STORAGE_KEY = "handoff.log";

/** The browser's view of the transparency log (decisions 9.6): kept in localStorage, asked with the session. */
const view = new LogView({
  load: async () => {
    const stored = localStorage.getItem(STORAGE_KEY);
    return stored ? (JSON.parse(stored) as LogState) : null;
  },
  save: async (state) => localStorage.setItem(STORAGE_KEY, JSON.stringify(state)),
  fetchVerifierKey: async () => (await api<{ vkey: string }>("/v1/log/key", { anonymous: true })).vkey,
  fetchConsistency: async (from, to) =>
    (await api<{ proof: string[] }>(`/v1/log/proof/consistency?from=${from}&to=${to}`)).proof,
});

/** A checkpoint covers an agent's new keys within about a second (decisions 9.2): wait that long for one. */
const PROOF_ATTEMPTS = 12;
const PROOF_RETRY_MS = 250;

/**
 * An agent's keys as resolve answers them, once the transparency log proves them: signed by the log
 * key this browser pinned, consistent with every checkpoint it saw. Throws a message naming the
 * agent otherwise, before anything is encrypted to them.
 */
export async function provenAgent(query: URLSearchParams): Promise<ResolvedAgent> {
  for (let attempt = 0; ; attempt++) {
    const agent = await api<ResolvedAgent>(`/v1/agents/resolve?${query}`);
    if (agent.public_key === null) return agent;
    if (agent.key_proof !== null || attempt >= PROOF_ATTEMPTS) {
      await requireProvenKeys(view, agent.agent_id, agent, agent.key_proof as KeyProof | null);
      return agent;
    }
    await new Promise((resolve) => setTimeout(resolve, PROOF_RETRY_MS));
  }
}
