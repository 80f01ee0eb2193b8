import { z } from "zod";
import { named, nameSchema, timestamp } from "./common.js";
import { operation } from "./operation.js";

/** The account object: `email_verified` only on a person's account (decisions 4.1). */
export const Account = named(
  "Account",
  z.object({
    id: z.uuid(),
    email: z.string(),
    name: z.string(),
    plan: z.string(),
    kind: z.enum(["human", "agent"]),
    email_verified: z.boolean().optional().describe("A person's account only"),
    created_at: timestamp,
  }),
  { description: "An account (decisions 2 and 4.1)" },
);

const AccountAnswer = named("AccountAnswer", z.object({ account: Account }), { description: "An account" });

/** Decisions 4.1: 10 to 200 characters. */
const passwordSchema = z.string().min(10).max(200);
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

export const Kdf = named(
  "Kdf",
  z.object({
    algorithm: z.literal("argon2id"),
    salt: z.string().min(4).max(256).regex(BASE64, "base64"),
    memory_kib: z
      .number()
      .int()
      .min(1024)
      .max(4 * 1024 * 1024),
    iterations: z.number().int().min(1).max(100),
    parallelism: z.number().int().min(1).max(64),
  }),
  { description: "How the receiving key pair is derived from the person's passphrase" },
);

export const ReceivingKey = named(
  "ReceivingKey",
  z.object({ public_key: z.string(), kdf: Kdf, key_version: z.number().int() }),
  { description: "A person's receiving public key (decisions 4.4)" },
);

// Sign-up, verification, log-in and log-out ignore Idempotency-Key: their bodies or answers carry a
// password or a token, which no idempotency record may keep.
export const signUp = operation({
  operationId: "signUp",
  method: "POST",
  path: "/v1/auth/signup",
  security: "none",
  idempotency: false,
  tag: "people",
  summary: "Create a person's account; a verification link goes to the address",
  body: named(
    "SignUp",
    z.object({ email: z.email().max(320), password: passwordSchema, name: nameSchema.min(1).optional() }),
    {
      description: "A new person's account",
      example: { email: "ada@example.com", password: "correct horse battery" },
    },
  ),
  responses: { 201: AccountAnswer },
  errors: [409],
});

export const verifyEmail = operation({
  operationId: "verifyEmail",
  method: "POST",
  path: "/v1/auth/verify",
  security: "none",
  idempotency: false,
  tag: "people",
  summary: "Confirm the address with the token of the verification link (single use, 24 h)",
  body: named("EmailVerification", z.object({ token: z.string().min(1).max(512) }), {
    description: "The token of the verification link",
  }),
  responses: { 200: AccountAnswer },
});

export const logIn = operation({
  operationId: "logIn",
  method: "POST",
  path: "/v1/auth/login",
  security: "none",
  idempotency: false,
  tag: "people",
  summary: "Start a 12-hour session (Bearer token) with e-mail and password",
  body: named("LogIn", z.object({ email: z.string().max(320), password: z.string().max(1024) }), {
    description: "A person's credentials",
  }),
  responses: {
    200: named(
      "Session",
      z.object({
        token: z.string().describe("The session token (`hss_…`): the Bearer credential of later requests"),
        expires_at: timestamp,
        account: Account,
      }),
      { description: "A session" },
    ),
  },
  errors: [401, 403, 429],
});

export const logOut = operation({
  operationId: "logOut",
  method: "POST",
  path: "/v1/auth/logout",
  security: "session",
  idempotency: false,
  tag: "people",
  summary: "End the caller's session at once",
  responses: {
    200: named("LoggedOut", z.object({ status: z.literal("logged_out") }), {
      description: "The session ended",
    }),
  },
});

export const getSession = operation({
  operationId: "getSession",
  method: "GET",
  path: "/v1/auth/session",
  security: "session",
  tag: "people",
  summary: "The account of the caller's session (for the web app)",
  responses: { 200: AccountAnswer },
});

export const setReceivingKey = operation({
  operationId: "setReceivingKey",
  method: "PUT",
  path: "/v1/auth/receiving-key",
  security: "session",
  tag: "people",
  summary: "Set (or rotate) the person's receiving public key; held transfers activate",
  body: named("ReceivingKeyChange", z.object({ public_key: z.string().max(64), kdf: Kdf }), {
    description: "The new receiving public key and how it was derived",
  }),
  responses: { 200: ReceivingKey },
  errors: [403],
});

export const getReceivingKey = operation({
  operationId: "getReceivingKey",
  method: "GET",
  path: "/v1/auth/receiving-key",
  security: "apiKey",
  tag: "people",
  summary: "The person's receiving public key and how it is derived; 404 when none is set",
  responses: { 200: ReceivingKey },
  errors: [404],
});

export const peopleOperations = [
  signUp,
  verifyEmail,
  logIn,
  logOut,
  getSession,
  setReceivingKey,
  getReceivingKey,
];
