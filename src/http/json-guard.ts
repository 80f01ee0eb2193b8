import type { FastifyInstance } from "fastify";
import { validationError } from "./errors.js";
import { MAX_JSON_DEPTH } from "./limits.js";

/** A lone UTF-16 surrogate: JSON escapes can make one, PostgreSQL text and jsonb cannot hold it. */
const LONE_SURROGATE = /\p{Cs}/u;

function textProblem(text: string): string | null {
  if (text.includes("\u0000")) return "text must not contain NUL (U+0000) characters";
  if (LONE_SURROGATE.test(text)) return "text must not contain lone UTF-16 surrogates";
  return null;
}

/**
 * What is wrong with a parsed JSON value for storage, with its path, or null: deeper than
 * MAX_JSON_DEPTH, or a string (value or key) PostgreSQL cannot hold. Iterative, so no input can
 * exhaust the stack.
 */
export function jsonProblem(value: unknown): { path: string; message: string } | null {
  const pending: { value: unknown; path: string[] }[] = [{ value, path: [] }];
  const at = (path: string[]) => path.join(".") || "body";
  for (let item = pending.pop(); item; item = pending.pop()) {
    if (typeof item.value === "string") {
      const message = textProblem(item.value);
      if (message) return { path: at(item.path), message };
      continue;
    }
    if (typeof item.value !== "object" || item.value === null) continue;
    if (item.path.length >= MAX_JSON_DEPTH) {
      return { path: at(item.path), message: `JSON must not nest deeper than ${MAX_JSON_DEPTH} levels` };
    }
    for (const [key, inner] of Object.entries(item.value)) {
      const path = [...item.path, key];
      const message = textProblem(key);
      if (message) return { path: at(path), message };
      pending.push({ value: inner, path });
    }
  }
  return null;
}

/** Refuses, as the client's mistake, a JSON value `jsonProblem` finds fault with; `path` prefixes its details. */
export function checkJson(value: unknown, path?: string): void {
  const problem = jsonProblem(value);
  if (!problem) return;
  const where = path ? (problem.path === "body" ? path : `${path}.${problem.path}`) : problem.path;
  throw validationError(problem.message, where);
}

/** Every JSON body, on every route, is checked once before validation sees it. */
export function registerJsonGuard(app: FastifyInstance): void {
  app.addHook("preValidation", (request, _reply, done) => {
    checkJson(request.body);
    done();
  });
}
