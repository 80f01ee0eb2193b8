import { randomUUID } from "node:crypto";
import { accountDecider } from "../../domain/account.js";
import { apiKeyDecider } from "../../domain/api-key.js";
import { limitsOf } from "../../domain/plans/catalog.js";
import { streams } from "../../domain/streams.js";
import { newApiKey, seal, sha256Hex } from "../security/secrets.js";
import type { CommandDeps } from "./deps.js";
import { type Actor, accepted, appendAll, load, retryOnConflict, toAppend } from "./streams.js";

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
  return deps.streamLock.run(streams.account(accountId), () =>
    retryOnConflict(async () => {
      const now = deps.clock.now().toISOString();
      const account = await load(deps.store, accountDecider, streams.account(accountId));
      const { issued, command } = mintApiKey(deps, accountId, name, now);
      const limits = limitsOf(account.state.plan);
      const accountEvents = accepted(
        accountDecider.decide({ type: "AddApiKey", keyId: issued.id }, account.state, { limits }),
      );
      const keyStream = { streamId: streams.apiKey(issued.id), expected: "no_stream" as const };
      const keyEvents = accepted(apiKeyDecider.decide(command, apiKeyDecider.initialState(), undefined));
      const position = await appendAll(deps.store, [
        toAppend(account, accountEvents, actor, now),
        toAppend(keyStream, keyEvents, actor, now),
      ]);
      return { position, apiKey: issued };
    }),
  );
}

export async function revokeApiKey(deps: CommandDeps, accountId: string, keyId: string, actor: Actor) {
  return retryOnConflict(async () => {
    const now = deps.clock.now().toISOString();
    const key = await load(deps.store, apiKeyDecider, streams.apiKey(keyId));
    const keyEvents = accepted(
      apiKeyDecider.decide({ type: "RevokeApiKey", accountId, now }, key.state, undefined),
    );
    const account = await load(deps.store, accountDecider, streams.account(accountId));
    const limits = limitsOf(account.state.plan);
    const accountEvents = accepted(
      accountDecider.decide({ type: "RemoveApiKey", keyId }, account.state, { limits }),
    );
    const position = await appendAll(deps.store, [
      toAppend(key, keyEvents, actor, now),
      toAppend(account, accountEvents, actor, now),
    ]);
    return { position };
  });
}
