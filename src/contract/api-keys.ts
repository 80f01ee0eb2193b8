import { z } from "zod";
import { list, named, nameSchema, timestamp } from "./common.js";
import { operation } from "./operation.js";

export const IssuedApiKey = named(
  "IssuedApiKey",
  z.object({
    id: z.uuid(),
    name: z.string(),
    api_key: z.string().describe("The key itself (`hnd_…`): shown this once, never again"),
    created_at: timestamp,
  }),
  {
    description: "A new API key",
    example: {
      id: "0b6e4f7a-2c1d-4e3f-8a9b-1c2d3e4f5a6b",
      name: "ci",
      api_key: "hnd_2Xk9v0Qm4Lr8Tz1Wc7Ny5Bp3Hd6Fj0Sa",
      created_at: "2026-01-01T12:00:00.000Z",
    },
  },
);

export const ApiKey = named("ApiKey", z.object({ id: z.uuid(), name: z.string(), created_at: timestamp }), {
  description: "An API key in use (never the key itself)",
  example: { id: "0b6e4f7a-2c1d-4e3f-8a9b-1c2d3e4f5a6b", name: "ci", created_at: "2026-01-01T12:00:00.000Z" },
});

export const RevokedApiKey = named(
  "RevokedApiKey",
  z.object({ id: z.uuid(), name: z.string(), status: z.literal("revoked"), revoked_at: timestamp }),
  { description: "A revoked API key: its next use answers 401" },
);

const accountParams = z.object({ account_id: z.string().describe("The caller's own account id") });

export const listApiKeys = operation({
  operationId: "listApiKeys",
  method: "GET",
  path: "/v1/api-keys",
  security: "apiKey",
  tag: "api keys",
  summary: "The caller's account's API keys in use (never the keys themselves), oldest first",
  responses: {
    200: list("ApiKeyList", "api_keys", ApiKey, "API keys in use"),
  },
});

export const createApiKey = operation({
  operationId: "createApiKey",
  method: "POST",
  path: "/v1/api-keys",
  security: "apiKey",
  tag: "api keys",
  summary: "Create an API key on the caller's account",
  body: named("ApiKeyCreation", z.object({ name: nameSchema.min(1) }), { description: "The new key's name" }),
  responses: { 201: IssuedApiKey },
  errors: [403],
});

export const createAccountApiKey = operation({
  operationId: "createAccountApiKey",
  method: "POST",
  path: "/v1/accounts/:account_id/api-keys",
  security: "apiKey",
  tag: "api keys",
  summary: "Create an API key on an account (the caller's own)",
  params: accountParams,
  body: z
    .object({ name: nameSchema.min(1).optional() })
    .nullish()
    .describe("Optional; the key is named `api key` without a name"),
  responses: { 201: IssuedApiKey },
  errors: [403],
});

export const revokeApiKey = operation({
  operationId: "revokeApiKey",
  method: "DELETE",
  path: "/v1/accounts/:account_id/api-keys/:key_id",
  security: "apiKey",
  tag: "api keys",
  summary: "Revoke an API key: its next use answers 401",
  params: accountParams.extend({ key_id: z.string().describe("The key's id") }),
  responses: { 200: RevokedApiKey },
  errors: [403, 404],
});

export const apiKeyOperations = [listApiKeys, createApiKey, createAccountApiKey, revokeApiKey];
