import { type KeyProof, type LogState, LogView, requireProvenKeys } from "@handoff/sdk/transparency";
import type { PublicRequest, ResolvedAgent } from "@handoff/sdk/types";
import { api } from "./api.js";
import { currentSession } from "./session.js";

/** Where this browser keeps the log key it pinned at first use and the newest checkpoint it saw. */
const STORAGE_KEY = "handoff.log";

const stored = (): LogState | null => {
  const text = localStorage.getItem(STORAGE_KEY);
  return text ? (JSON.parse(text) as LogState) : null;
};
const fetchVerifierKey = async () => (await api<{ vkey: string }>("/v1/log/key", { anonymous: true })).vkey;

/** The browser's view of the transparency log (decisions 9.6): kept in localStorage, asked with the session. */
const view = new LogView({
  load: async () => stored(),
  save: async (state) => localStorage.setItem(STORAGE_KEY, JSON.stringify(state)),
  fetchVerifierKey,
  fetchConsistency: async (from, to) =>
    (await api<{ proof: string[] }>(`/v1/log/proof/consistency?from=${from}&to=${to}`)).proof,
});

/**
 * The view of a visitor with no session (a person answering a request link): consistency proofs
 * need a credential (decisions 9.3), so it holds the log key pinned at first use (the same one the
 * app pins) and checks each proof's checkpoint against that key, but keeps no checkpoint to hold
 * the next one to. A visitor who is logged in in this tab gets the whole view above.
 */
const visitorView = new LogView({
  load: async () => {
    const state = stored();
    return state ? { vkey: state.vkey, checkpoint: null } : null;
  },
  save: async (state) => {
    if (!stored()) localStorage.setItem(STORAGE_KEY, JSON.stringify({ vkey: state.vkey, checkpoint: null }));
  },
  fetchVerifierKey,
  fetchConsistency: async () => {
    throw new Error("a visitor without a session keeps no checkpoint to prove consistency with");
  },
});

/**
 * A checkpoint covers an agent's new keys within about a second (decisions 9.2): resolve is asked
 * again for that long; a request link, whose reads count against its 10 a minute, fewer times.
 */
const RESOLVE_WAIT = { attempts: 12, waitMs: 250 };
const LINK_WAIT = { attempts: 4, waitMs: 500 };

/** Reads an answer again, a few times, while the log has not signed the key it names yet (its proof is null). */
async function untilProven<T>(
  read: () => Promise<T>,
  proofOf: (answer: T) => unknown,
  { attempts, waitMs }: { attempts: number; waitMs: number },
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const answer = await read();
    if (proofOf(answer) !== null || attempt >= attempts) return answer;
    await new Promise((resolve) => setTimeout(resolve, waitMs));
  }
}

/**
 * An agent's keys as resolve answers them, once the transparency log proves them: signed by the log
 * key this browser pinned, consistent with every checkpoint it saw. Throws a message naming the
 * agent otherwise, before anything is encrypted to them.
 */
export async function provenAgent(query: URLSearchParams): Promise<ResolvedAgent> {
  const agent = await untilProven(
    () => api<ResolvedAgent>(`/v1/agents/resolve?${query}`),
    (answer) => (answer.public_key === null ? "no key to prove" : answer.key_proof),
    RESOLVE_WAIT,
  );
  if (agent.public_key !== null)
    await requireProvenKeys(view, agent.agent_id, agent, agent.key_proof as KeyProof | null);
  return agent;
}

/**
 * A request link's answer (decisions 10.2), once the log proves the key it names for the agent
 * (9.6): the page encrypts nothing before this. Each read counts against the link's 10 requests a
 * minute, so it is read again only a few times while the log has not signed a new key yet. The
 * page only encrypts to the agent, so its key and version are what the proof must back; the
 * signing key, which the answer does not carry, is taken as the proven entry holds it.
 */
export async function provenRequest(read: () => Promise<PublicRequest>): Promise<PublicRequest> {
  const request = await untilProven(read, (answer) => answer.agent.key_proof, LINK_WAIT);
  const { agent } = request;
  const proof = agent.key_proof as KeyProof | null;
  const signing = (proof?.entry.data as { signingPublicKey?: string } | undefined)?.signingPublicKey ?? null;
  await requireProvenKeys(
    currentSession() ? view : visitorView,
    agent.agent_id,
    { public_key: agent.public_key, key_version: agent.key_version, signing_public_key: signing },
    proof,
  );
  return request;
}
