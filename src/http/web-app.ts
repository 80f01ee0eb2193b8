import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import fastifyStatic from "@fastify/static";
import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from "fastify";
import { sendNotFound } from "./errors.js";

/**
 * The pages of decisions 4.8, `/t/{id}` (a transfer's `url`, shown in the inbox) and `/r/{token}`
 * (a request link's page, 10.4): each answers with the app's one HTML document, which routes in
 * the browser.
 */
export const WEB_APP_PAGES = [
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
  "/t/:id",
  "/r/:token",
] as const;

/** Paths of the API and the operational endpoints: an unknown one answers the JSON 404 to anyone. */
const API_PATHS = /^\/(v1|docs|metrics|healthz|readyz)(\/|$)/;

/** Where the bundler puts hashed file names: safe to cache for a year. */
const HASHED_ASSETS = "/assets/";
const ONE_YEAR_SECONDS = 365 * 24 * 3600;

/**
 * The app's Content-Security-Policy: scripts, styles, workers and fetches from this origin only,
 * no inline script or style, no eval; 'wasm-unsafe-eval' lets the browser compile argon2id's
 * WebAssembly. `extraConnect` adds the object store's origin when downloads come from S3.
 */
export function contentSecurityPolicy(extraConnect: string[] = []): string {
  return [
    "default-src 'self'",
    "script-src 'self' 'wasm-unsafe-eval'",
    "style-src 'self'",
    "img-src 'self' data:",
    ["connect-src 'self'", ...extraConnect].join(" "),
    "worker-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join("; ");
}

/**
 * Where presigned download links point when file data is in S3: the browser's service worker
 * fetches them, so the policy must allow that origin (the bucket also needs CORS for GET).
 */
export function objectStoreOrigins(
  s3: { endpoint: string | null; publicEndpoint?: string | null; forcePathStyle: boolean } | null,
): string[] {
  if (!s3) return [];
  // The browser goes where presigned URLs point: the public endpoint when there is one.
  const endpoint = s3.publicEndpoint ?? s3.endpoint;
  if (!endpoint) return ["https://*.amazonaws.com"];
  const { protocol, host } = new URL(endpoint);
  return s3.forcePathStyle ? [`${protocol}//${host}`] : [`${protocol}//${host}`, `${protocol}//*.${host}`];
}

/** The built app (`npm run build` puts it in dist/web), found from this file in src/ or in dist/src/. */
export function defaultWebRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, "package.json"))) {
    const parent = dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  return join(dir, "dist", "web");
}

export interface WebAppOptions {
  root: string;
  /** Origins the browser may fetch besides this one (the S3 endpoint for download links). */
  connectOrigins?: string[];
}

/** What every file of the app is served with. */
function securityHeaders(connectOrigins: string[]): [string, string][] {
  return [
    ["content-security-policy", contentSecurityPolicy(connectOrigins)],
    ["x-content-type-options", "nosniff"],
    // The verify and reset links carry their token in the query: never send it on as a Referer.
    ["referrer-policy", "no-referrer"],
    ["cross-origin-opener-policy", "same-origin"],
  ];
}

/**
 * The 404 of every unknown path. A browser opening a page that does not exist (a GET asking for
 * HTML, outside the API's paths) gets the app's document with status 404, and the app shows its
 * "page not found" page; everything else, API clients and the API's own paths included, gets the
 * JSON error body. Without a build, the JSON answer for all.
 */
export function notFoundAnswer({ root, connectOrigins = [] }: WebAppOptions) {
  const page = join(root, "index.html");
  const built = existsSync(page);
  const headers = securityHeaders(connectOrigins);
  return async (request: FastifyRequest, reply: FastifyReply) => {
    const path = request.url.split("?")[0] ?? "/";
    const wantsPage =
      (request.method === "GET" || request.method === "HEAD") &&
      (request.headers.accept ?? "").includes("text/html") &&
      !API_PATHS.test(path);
    if (!built || !wantsPage) return sendNotFound(request, reply);
    for (const [name, value] of headers) reply.header(name, value);
    return reply
      .status(404)
      .header("cache-control", "no-cache")
      .type("text/html; charset=utf-8")
      .send(await readFile(page));
  };
}

/**
 * Serves the web app from the same origin as the API: one route per built file (no wildcard, so
 * nothing under /v1, /docs, /metrics or /healthz is shadowed; unknown paths get notFoundAnswer),
 * and the page paths answered with index.html. The HTML and the service worker are
 * revalidated on every load so a new build takes effect at once; hashed assets are immutable.
 * Every file (index.html included, through sendFile) carries the security headers.
 */
export function webAppRoutes({ root, connectOrigins = [] }: WebAppOptions): FastifyPluginAsync {
  const headers = securityHeaders(connectOrigins);

  return async (app: FastifyInstance) => {
    app.addHook("onRoute", (route) => {
      route.config = { ...(route.config ?? {}), auth: "none" };
    });
    await app.register(fastifyStatic, {
      root,
      wildcard: false,
      index: false,
      cacheControl: false,
      setHeaders(res, path) {
        for (const [name, value] of headers) res.setHeader(name, value);
        const hashed = path.startsWith(join(root, HASHED_ASSETS));
        res.setHeader(
          "cache-control",
          hashed ? `public, max-age=${ONE_YEAR_SECONDS}, immutable` : "no-cache",
        );
      },
    });
    for (const page of WEB_APP_PAGES) {
      app.get(page, { schema: { hide: true } }, (_request, reply) => {
        return reply.sendFile("index.html");
      });
    }
  };
}

/** Registers the app when it has been built; without a build the API runs alone and says so. */
export async function registerWebApp(app: FastifyInstance, options: WebAppOptions): Promise<void> {
  if (!existsSync(join(options.root, "index.html"))) {
    app.log.warn(`web app not built (no ${options.root}/index.html): run npm run build`);
    return;
  }
  await app.register(webAppRoutes(options));
}
