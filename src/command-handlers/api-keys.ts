import { randomUUID } from "node:crypto";
import { apiKeyDecider } from "../../domain/api-key.js";
import { streams } from "../../domain/streams.js";
import { newApiKey, seal, sha256Hex } from "../security/secrets.js";
import { decideOnAccount } from "./account-stream.js";
import type { CommandDeps } from "./deps.js";
import { handle } from "./handle.js";
import type { Actor } from "./streams.js";

export interface IssuedApiKey {
  id: string;
  name: string;
  apiKey: string;
  createdAt: string;
}

/** A fresh key and the ApiKeyCreated command that records it (digest and sealed copy only). */
export function mintApiKey(deps: CommandDeps, accountId: string, name: string, now: string) {
  const apiKey = newApiKey();
  const keyId = randomUUID();
  const command = {
    type: "CreateApiKey" as const,
    keyId,
    accountId,
    name,
    keyHash: sha256Hex(apiKey),
    sealedKey: seal(deps.serverKey, "api-key", apiKey),
    now,
  };
  return { issued: { id: keyId, name, apiKey, createdAt: now } satisfies IssuedApiKey, command };
}

export async function createApiKey(deps: CommandDeps, accountId: string, name: string, actor: Actor) {
  return handle(deps, { actor, lock: streams.account(accountId) }, async (turn) => {
    const { issued, command } = mintApiKey(deps, accountId, name, turn.at());
    await decideOnAccount(turn, accountId, { type: "AddApiKey", keyId: issued.id });
    turn.decide(apiKeyDecider, turn.newStream(apiKeyDecider, streams.apiKey(issued.id)), command, undefined);
    return { apiKey: issued };
  });
}

export async function revokeApiKey(deps: CommandDeps, accountId: string, keyId: string, actor: Actor) {
  return handle(deps, { actor }, async (turn) => {
    const key = await turn.load(apiKeyDecider, streams.apiKey(keyId));
    turn.decide(apiKeyDecider, key, { type: "RevokeApiKey", accountId, now: turn.at() }, undefined);
    await decideOnAccount(turn, accountId, { type: "RemoveApiKey", keyId });
    return {};
  });
}
