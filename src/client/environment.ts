import { resolve } from "node:path";
import { HandoffClient, loadIdentity, SDK_VERSION } from "@handoff/sdk";

/** Decisions 5.5: the client's whole configuration is these two variables. */
export const DEFAULT_HANDOFF_URL = "http://127.0.0.1:8080";

export interface ClientSettings {
  baseUrl: string;
  apiKey: string;
}

export function clientSettings(env: NodeJS.ProcessEnv): ClientSettings {
  const baseUrl = env.HANDOFF_URL || DEFAULT_HANDOFF_URL;
  if (!URL.canParse(baseUrl) || !/^https?:$/.test(new URL(baseUrl).protocol))
    throw new Error(`HANDOFF_URL must be an http or https URL, got "${baseUrl}"`);
  const apiKey = env.HANDOFF_API_KEY;
  if (!apiKey) throw new Error("HANDOFF_API_KEY is not set: give the API key of the agent's account");
  return { baseUrl, apiKey };
}

export const userAgent = (part: "cli" | "mcp") => `handoff-${part}/${SDK_VERSION}`;

/** The client acting for the account of HANDOFF_API_KEY, as no agent in particular. */
export function accountClient(part: "cli" | "mcp"): HandoffClient {
  return new HandoffClient({ ...clientSettings(process.env), userAgent: userAgent(part) });
}

/** The client acting as the agent of an identity file. */
export async function agentClient(identityPath: string, part: "cli" | "mcp"): Promise<HandoffClient> {
  const settings = clientSettings(process.env);
  const identity = await loadIdentity(resolve(identityPath));
  return new HandoffClient({ ...settings, identity, userAgent: userAgent(part) });
}

/**
 * The client that answers a request link (decisions 10.5): as the agent of an identity file when
 * one is given (its pinned log view checks the link's key), else as the account of HANDOFF_API_KEY
 * when set, else as someone with no account, which a link needs none of (its token is the
 * credential).
 */
export async function linkSenderClient(identityPath: string | undefined): Promise<HandoffClient> {
  if (identityPath) return agentClient(identityPath, "cli");
  if (process.env.HANDOFF_API_KEY) return accountClient("cli");
  const baseUrl = process.env.HANDOFF_URL || DEFAULT_HANDOFF_URL;
  return new HandoffClient({ baseUrl, apiKey: "", userAgent: userAgent("cli") });
}
