import { z } from "zod";
import { named } from "./common.js";
import { operation } from "./operation.js";

/** Decisions 4.1: a login password has 10 to 200 characters. */
const loginPassword = z.string().min(10).max(200).describe("10 to 200 characters");

export const MailRequest = named("MailRequest", z.object({ email: z.email().max(320) }), {
  description: "The address to mail a link to",
  example: { email: "carol@example.com" },
});

export const MailRequested = named(
  "MailRequested",
  z.object({ status: z.literal("accepted"), message: z.string() }),
  {
    description:
      "The one answer for any address, with an account or not: it tells nobody whether the address has one",
    example: {
      status: "accepted",
      message: "if this address has an account that needs it, an e-mail is on its way",
    },
  },
);

export const PasswordReset = named(
  "PasswordReset",
  z.object({
    token: z.string().min(1).max(512).describe("The token=… of the password-reset e-mail's link"),
    password: loginPassword,
  }),
  { description: "A new login password, with the reset link's token" },
);

export const PasswordChange = named(
  "PasswordChange",
  z.object({ current_password: z.string().max(1024), new_password: loginPassword }),
  { description: "A new login password, with the current one" },
);

// Their bodies carry an address probed for, a password or a token: no Idempotency-Key record keeps them.

export const resendVerification = operation({
  operationId: "resendVerification",
  method: "POST",
  path: "/v1/auth/resend-verification",
  security: "none",
  tag: "people",
  summary: "Send a new verification link (earlier ones stop working); the same 202 for any address",
  body: MailRequest,
  responses: { 202: MailRequested },
  errors: [429],
  idempotency: false,
});

export const forgotPassword = operation({
  operationId: "forgotPassword",
  method: "POST",
  path: "/v1/auth/forgot-password",
  security: "none",
  tag: "people",
  summary: "Mail a password-reset link (single use, 1 h); the same 202 for any address",
  body: MailRequest,
  responses: { 202: MailRequested },
  errors: [429],
  idempotency: false,
});

export const resetPassword = operation({
  operationId: "resetPassword",
  method: "POST",
  path: "/v1/auth/reset-password",
  security: "none",
  tag: "people",
  summary: "Set a new login password with the reset link's token; every session of the account ends",
  body: PasswordReset,
  responses: { 200: z.object({ status: z.literal("password_reset") }) },
  idempotency: false,
});

export const changePassword = operation({
  operationId: "changePassword",
  method: "PUT",
  path: "/v1/auth/password",
  security: "session",
  tag: "people",
  summary: "Change the login password (the current one required); the account's other sessions end",
  body: PasswordChange,
  responses: { 200: z.object({ status: z.literal("password_changed") }) },
  errors: [403],
});

export const accountRecoveryOperations = [resendVerification, forgotPassword, resetPassword, changePassword];
