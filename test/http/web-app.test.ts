import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestApp, type TestApp } from "../support/app.js";
import { tempDir } from "../support/databases.js";
import { expectError } from "./helpers.js";

/** A stand-in for the built app (dist/web): the same layout, tiny files. */
function fixtureWebRoot(): { path: string; remove(): void } {
  const dir = tempDir("handoff-web-");
  mkdirSync(join(dir.path, "assets"));
  writeFileSync(join(dir.path, "index.html"), "<!doctype html><title>Handoff</title><main id=main></main>");
  writeFileSync(join(dir.path, "assets", "index-abc123.js"), "console.log('app')");
  writeFileSync(join(dir.path, "sw.js"), "self.addEventListener('fetch', () => {})");
  return dir;
}

const PAGES = [
  "/",
  "/signup",
  "/verify",
  "/login",
  "/inbox",
  "/send",
  "/settings",
  "/sent",
  "/forgot-password",
  "/reset-password",
  "/resend-verification",
  "/t/tr_abc123",
  `/r/hrq_${"A".repeat(32)}`,
];
const HTML = { accept: "text/html,application/xhtml+xml,*/*;q=0.8" };

describe("the web app, served from the API's origin (decisions 4.8)", () => {
  let t: TestApp;
  let root: { path: string; remove(): void };
  beforeAll(async () => {
    root = fixtureWebRoot();
    t = await startTestApp({ app: { webRoot: root.path } });
  });
  afterAll(async () => {
    await t?.close();
    root?.remove();
  });

  it.each(PAGES)(
    "GET %s answers the app's HTML, revalidated on each load, with a strict CSP",
    async (page) => {
      const res = await t.call("GET", `${page}?token=abc`);
      expect(res.statusCode).toBe(200);
      expect(res.headers["content-type"]).toMatch(/^text\/html/);
      expect(res.body).toContain("<main id=main>");
      expect(res.headers["cache-control"]).toBe("no-cache");
      const csp = String(res.headers["content-security-policy"]);
      expect(csp).toContain("script-src 'self' 'wasm-unsafe-eval'");
      expect(csp).toContain("default-src 'self'");
      expect(csp).toContain("frame-ancestors 'none'");
      expect(csp).not.toMatch(/unsafe-inline|'unsafe-eval'|https?:/);
      expect(res.headers["referrer-policy"]).toBe("no-referrer");
      expect(res.headers["x-content-type-options"]).toBe("nosniff");
    },
  );

  it("serves hashed assets as immutable for a year, and the service worker revalidated", async () => {
    const asset = await t.call("GET", "/assets/index-abc123.js");
    expect(asset.statusCode).toBe(200);
    expect(asset.headers["content-type"]).toMatch(/javascript/);
    expect(asset.headers["cache-control"]).toBe("public, max-age=31536000, immutable");
    const worker = await t.call("GET", "/sw.js");
    expect(worker.statusCode).toBe(200);
    expect(worker.headers["cache-control"]).toBe("no-cache");
    expect(worker.headers["content-security-policy"]).toContain("default-src 'self'");
  });

  it("shadows nothing: the API, health, metrics and docs answer as before, unknown paths get the JSON 404", async () => {
    expect((await t.call("GET", "/healthz")).json()).toEqual({ status: "ok" });
    expect((await t.call("GET", "/metrics")).statusCode).toBe(200);
    expect((await t.call("GET", "/docs/json")).json().openapi).toBe("3.1.0");
    expectError(await t.call("GET", "/v1/agents"), 401, "UNAUTHORIZED");
    expectError(await t.call("GET", "/v1/no-such-route"), 404, "NOT_FOUND");
    expectError(await t.call("GET", "/inbox/extra"), 404, "NOT_FOUND");
    expectError(await t.call("GET", "/t/tr_abc/extra"), 404, "NOT_FOUND");
    expectError(await t.call("GET", "/assets/missing.js"), 404, "NOT_FOUND");
    expectError(await t.call("GET", "/index.html/../../package.json"), 404, "NOT_FOUND");
    expectError(await t.call("POST", "/inbox", { body: {} }), 404, "NOT_FOUND");
  });

  it("answers a browser opening an unknown page with the app's document and status 404; API paths keep JSON", async () => {
    for (const path of ["/no-such-page", "/inbox/extra", "/t/tr_abc/extra", "/settings/keys?x=1"]) {
      const page = await t.call("GET", path, { headers: HTML });
      expect(page.statusCode, path).toBe(404);
      expect(page.headers["content-type"]).toMatch(/^text\/html/);
      expect(page.body).toContain("<main id=main>");
      expect(page.headers["cache-control"]).toBe("no-cache");
      expect(String(page.headers["content-security-policy"])).not.toMatch(/unsafe-inline|'unsafe-eval'/);
    }
    for (const path of ["/v1/no-such-route", "/v1", "/docs/nothing", "/healthz/x", "/metrics/x"]) {
      expectError(await t.call("GET", path, { headers: HTML }), 404, "NOT_FOUND");
    }
    expectError(await t.call("POST", "/no-such-page", { headers: HTML, body: {} }), 404, "NOT_FOUND");
  });

  it("keeps the pages out of the OpenAPI document", async () => {
    const paths = Object.keys((await t.call("GET", "/docs/json")).json().paths);
    expect(
      paths.filter(
        (path) => !path.startsWith("/v1/") && !path.startsWith("/health") && !path.startsWith("/ready"),
      ),
    ).toEqual([]);
  });
});

describe("without a built web app", () => {
  it("the API runs alone: / is the JSON 404", async () => {
    const empty = tempDir("handoff-web-empty-");
    const t = await startTestApp({ app: { webRoot: empty.path } });
    try {
      expectError(await t.call("GET", "/"), 404, "NOT_FOUND");
      expectError(await t.call("GET", "/", { headers: HTML }), 404, "NOT_FOUND");
      expect((await t.call("GET", "/healthz")).statusCode).toBe(200);
    } finally {
      await t.close();
      empty.remove();
    }
  });
});
