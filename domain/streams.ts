/** Stream names, one place for all: `<category>-<id>`. */
export const streams = {
  account: (accountId: string) => `account-${accountId}`,
  /** By person id since decisions 6.5; by SHA-256 of the lower-case address before (legacy). */
  accountEmail: (personOrDigest: string) => `account_email-${personOrDigest}`,
  erasure: (erasureId: string) => `erasure-${erasureId}`,
  agent: (agentId: string) => `agent-${agentId}`,
  apiKey: (keyId: string) => `api_key-${keyId}`,
  human: (accountId: string) => `human-${accountId}`,
  session: (sessionId: string) => `session-${sessionId}`,
  broadcast: (broadcastId: string) => `broadcast-${broadcastId}`,
  transfer: (transferId: string) => `transfer-${transferId}`,
  requestLink: (requestId: string) => `request_link-${requestId}`,
  connection: (pair: string) => `connection-${pair}`,
  usage: (accountId: string) => `usage-${accountId}`,
  /** An agent's webhook attempts (decisions 8.3), apart from its own stream so that one stays short. */
  webhook: (agentId: string) => `webhook-${agentId}`,
};

export function categoryOf(streamId: string): string {
  return streamId.slice(0, streamId.indexOf("-"));
}

export function idOf(streamId: string): string {
  return streamId.slice(streamId.indexOf("-") + 1);
}
