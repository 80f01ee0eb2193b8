import type { LightMyRequestResponse } from "fastify";
import { expect } from "vitest";
import { apiKeyWellFormed, newApiKey } from "../../src/security/secrets.js";
import { ADMIN_TOKEN, randomPublicKey, type TestApp } from "../support/app.js";

export interface ErrorBody {
  code: string;
  message: string;
  status: number;
  details?: { path: string; message: string }[];
}

/**
 * Asserts the one error body of decisions 3.1: `{error: {code, message, status}}` with `status`
 * equal to the HTTP status, `details` (a non-empty list of `{path, message}`) on VALIDATION_ERROR
 * and nothing else. Returns the error object for further checks.
 */
export function expectError(res: LightMyRequestResponse, status: number, code: string): ErrorBody {
  expect(res.statusCode, res.body).toBe(status);
  expect(res.headers["content-type"]).toMatch(/^application\/json/);
  const body = res.json();
  expect(Object.keys(body)).toEqual(["error"]);
  const error = body.error as ErrorBody;
  expect(error.code).toBe(code);
  expect(error.status).toBe(status);
  expect(typeof error.message).toBe("string");
  expect(error.message.length).toBeGreaterThan(0);
  const allowed = [
    "code",
    "message",
    "status",
    ...(code === "VALIDATION_ERROR" ? ["details"] : []),
    ...(code === "AMBIGUOUS_RECIPIENT" ? ["candidates"] : []),
  ];
  for (const key of Object.keys(error)) expect(allowed).toContain(key);
  if (code === "VALIDATION_ERROR") {
    expect(Array.isArray(error.details), "VALIDATION_ERROR carries a details list").toBe(true);
    expect(error.details?.length).toBeGreaterThan(0);
    for (const detail of error.details ?? []) {
      expect(Object.keys(detail).sort()).toEqual(["message", "path"]);
      expect(typeof detail.path).toBe("string");
      expect(typeof detail.message).toBe("string");
    }
  }
  return error;
}

/** The details paths of a VALIDATION_ERROR. */
export function detailPaths(error: ErrorBody): string[] {
  return (error.details ?? []).map((detail) => detail.path);
}

/** Every property name anywhere in a JSON value. */
export function allKeys(value: unknown): string[] {
  if (Array.isArray(value)) return value.flatMap(allKeys);
  if (value && typeof value === "object") {
    return Object.entries(value).flatMap(([key, inner]) => [key, ...allKeys(inner)]);
  }
  return [];
}

/** Registers a connected agent (one-shot) and returns the 201 body. */
export async function registerAgent(
  t: TestApp,
  apiKey: string,
  body: Record<string, unknown> & { agent_id: string },
) {
  const res = await t.call("POST", "/v1/agents/register", {
    key: apiKey,
    body: { public_key: randomPublicKey(), ...body },
  });
  expect(res.statusCode, res.body).toBe(201);
  return res.json() as { id: string; agent_id: string; key_version: number; public_key: string };
}

/** Registers a pending agent (two-step) and returns the 201 body. */
export async function registerPending(t: TestApp, apiKey: string, agentId: string) {
  const res = await t.call("POST", "/v1/agents/register", { key: apiKey, body: { agent_id: agentId } });
  expect(res.statusCode, res.body).toBe(201);
  return res.json() as {
    id: string;
    agent_id: string;
    connection_token: string;
    claim_code: string;
    token_expires_at: string;
    created_at: string;
  };
}

/** Moves the service clock forward through the admin endpoint. */
export async function advanceClock(t: TestApp, seconds: number): Promise<string> {
  const res = await t.call("POST", "/v1/admin/clock", {
    key: ADMIN_TOKEN,
    body: { advance_seconds: seconds },
  });
  expect(res.statusCode, res.body).toBe(200);
  return (res.json() as { now: string }).now;
}

/**
 * Moves the service clock 1–2 s into the next window of `windowMs`: limits count in fixed windows
 * aligned to that clock, so a test that makes a limit's worth of requests must not straddle a
 * window's end.
 */
export async function startOfWindow(t: TestApp, windowMs: number): Promise<void> {
  const now = t.service.clock.now().getTime();
  const next = Math.floor(now / windowMs) * windowMs + windowMs;
  await advanceClock(t, Math.ceil((next - now) / 1000) + 1);
}

/** A syntactically valid API key (prefix, length and checksum) that no account holds. */
export function wellFormedUnknownKey(): string {
  const key = newApiKey();
  expect(apiKeyWellFormed(key)).toBe(true);
  return key;
}
