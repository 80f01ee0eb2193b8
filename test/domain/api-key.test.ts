import { describe, it } from "vitest";
import { type ApiKeyCommand, type ApiKeyEvent, apiKeyDecider } from "../../domain/api-key.js";
import { given } from "./given.js";

const CREATED_AT = "2026-01-01T00:00:00.000Z";
const REVOKED_AT = "2026-01-02T00:00:00.000Z";

const create: ApiKeyCommand = {
  type: "CreateApiKey",
  keyId: "key-1",
  accountId: "acc-1",
  name: "ci",
  keyHash: "sha256-of-key",
  sealedKey: "sealed-key",
  now: CREATED_AT,
};

const created: ApiKeyEvent = {
  type: "ApiKeyCreated",
  data: {
    keyId: "key-1",
    accountId: "acc-1",
    name: "ci",
    keyHash: "sha256-of-key",
    sealedKey: "sealed-key",
    createdAt: CREATED_AT,
  },
};
const revoked: ApiKeyEvent = { type: "ApiKeyRevoked", data: { revokedAt: REVOKED_AT } };

describe("api key decider", () => {
  describe("CreateApiKey", () => {
    it("creates the key with its hash and sealed copy, stamped with the command's time", () => {
      given(apiKeyDecider, []).when(create).then([created]);
    });

    it("refuses to create a key that already exists", () => {
      given(apiKeyDecider, [created]).when(create).thenRefused("FORBIDDEN");
    });

    it("refuses to create a key again after it was revoked", () => {
      given(apiKeyDecider, [created, revoked]).when(create).thenRefused("FORBIDDEN");
    });
  });

  describe("RevokeApiKey", () => {
    it("revokes the account's own key", () => {
      given(apiKeyDecider, [created])
        .when({ type: "RevokeApiKey", accountId: "acc-1", now: REVOKED_AT })
        .then([revoked]);
    });

    it("records nothing when the key is already revoked", () => {
      given(apiKeyDecider, [created, revoked])
        .when({ type: "RevokeApiKey", accountId: "acc-1", now: "2026-01-03T00:00:00.000Z" })
        .then([]);
    });

    it("refuses a key that does not exist as not found", () => {
      given(apiKeyDecider, [])
        .when({ type: "RevokeApiKey", accountId: "acc-1", now: REVOKED_AT })
        .thenRefused("NOT_FOUND");
    });

    it("refuses another account's key as not found, so key ids cannot be probed", () => {
      given(apiKeyDecider, [created])
        .when({ type: "RevokeApiKey", accountId: "acc-2", now: REVOKED_AT })
        .thenRefused("NOT_FOUND");
    });

    it("refuses another account's already revoked key as not found too", () => {
      given(apiKeyDecider, [created, revoked])
        .when({ type: "RevokeApiKey", accountId: "acc-2", now: REVOKED_AT })
        .thenRefused("NOT_FOUND");
    });
  });
});
