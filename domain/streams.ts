/** Stream names, one place for all: `<category>-<id>`. */
export const streams = {
  account: (accountId: string) => `account-${accountId}`,
  accountEmail: (emailDigest: string) => `account_email-${emailDigest}`,
  agent: (agentId: string) => `agent-${agentId}`,
  apiKey: (keyId: string) => `api_key-${keyId}`,
  transfer: (transferId: string) => `transfer-${transferId}`,
  usage: (accountId: string) => `usage-${accountId}`,
};

export function categoryOf(streamId: string): string {
  return streamId.slice(0, streamId.indexOf("-"));
}

export function idOf(streamId: string): string {
  return streamId.slice(streamId.indexOf("-") + 1);
}
