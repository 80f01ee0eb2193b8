import { type Decider, type Decision, refuse, unreachable } from "./decider.js";

/**
 * An API key. The log keeps its SHA-256 digest for look-up and a copy sealed under the server key
 * (so the owner can reveal it again); the key in clear is never recorded.
 */
export type ApiKeyEvent =
  | {
      type: "ApiKeyCreated";
      data: {
        keyId: string;
        accountId: string;
        name: string;
        keyHash: string;
        sealedKey: string;
        createdAt: string;
      };
    }
  | { type: "ApiKeyRevoked"; data: { revokedAt: string } };

export type ApiKeyCommand =
  | {
      type: "CreateApiKey";
      keyId: string;
      accountId: string;
      name: string;
      keyHash: string;
      sealedKey: string;
      now: string;
    }
  | { type: "RevokeApiKey"; accountId: string; now: string };

export interface ApiKeyState {
  exists: boolean;
  accountId: string;
  revoked: boolean;
}

function decide(command: ApiKeyCommand, state: ApiKeyState): Decision<ApiKeyEvent> {
  switch (command.type) {
    case "CreateApiKey": {
      if (state.exists) return refuse("FORBIDDEN", "this API key already exists");
      const { keyId, accountId, name, keyHash, sealedKey, now } = command;
      return [
        { type: "ApiKeyCreated", data: { keyId, accountId, name, keyHash, sealedKey, createdAt: now } },
      ];
    }
    case "RevokeApiKey":
      // Another account's key answers exactly like a missing one, so key ids cannot be probed.
      if (!state.exists || state.accountId !== command.accountId)
        return refuse("NOT_FOUND", "no such API key");
      if (state.revoked) return [];
      return [{ type: "ApiKeyRevoked", data: { revokedAt: command.now } }];
    default:
      return unreachable(command);
  }
}

function evolve(state: ApiKeyState, event: ApiKeyEvent): ApiKeyState {
  switch (event.type) {
    case "ApiKeyCreated":
      return { exists: true, accountId: event.data.accountId, revoked: false };
    case "ApiKeyRevoked":
      return { ...state, revoked: true };
    default:
      return unreachable(event);
  }
}

export const apiKeyDecider: Decider<ApiKeyCommand, ApiKeyEvent, ApiKeyState> = {
  initialState: () => ({ exists: false, accountId: "", revoked: false }),
  evolve,
  decide: (command, state) => decide(command, state),
};
