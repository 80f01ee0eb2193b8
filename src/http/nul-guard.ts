import type { FastifyInstance } from "fastify";
import { validationError } from "./errors.js";

/** The path of the first string (value or key) holding a NUL character, or null. */
function nulPath(value: unknown, path: string[]): string | null {
  if (typeof value === "string") return value.includes("\u0000") ? path.join(".") || "body" : null;
  if (typeof value !== "object" || value === null) return null;
  for (const [key, item] of Object.entries(value)) {
    if (key.includes("\u0000")) return [...path, key].join(".");
    const found = nulPath(item, [...path, key]);
    if (found !== null) return found;
  }
  return null;
}

/**
 * PostgreSQL text and jsonb cannot hold U+0000, so such input would fail deep in a write; refuse it
 * up front, in every JSON body, as the client's mistake it is.
 */
export function registerNulGuard(app: FastifyInstance): void {
  app.addHook("preValidation", async (request) => {
    const path = nulPath(request.body, []);
    if (path !== null) throw validationError("text must not contain NUL (U+0000) characters", path);
  });
}
