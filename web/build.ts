import { fileURLToPath } from "node:url";
import { type Alias, build, defaultClientConditions, type InlineConfig } from "vite";

const WEB = fileURLToPath(new URL(".", import.meta.url));
const DEFAULT_OUT = fileURLToPath(new URL("../dist/web", import.meta.url));

/**
 * Both builds bundle the SDK's crypto core from its TypeScript sources (the "source" condition).
 * `alias` swaps a module for another: only benchmarks pass one (bench/request-page.ts measures the
 * page with its encryption taken out, in a build of its own that is never served to anyone).
 */
function shared(logLevel: InlineConfig["logLevel"], alias: Alias[]): InlineConfig {
  return {
    configFile: false,
    root: WEB,
    logLevel,
    resolve: { conditions: ["source", ...defaultClientConditions], alias },
  };
}

/**
 * Builds the web app into `outDir`: the pages (index.html and hashed assets), then the service
 * worker as one classic script at /sw.js. The worker is a separate build because a service worker
 * must be a single file at a fixed URL, and classic scripts work in every browser that has one.
 */
export async function buildWebApp(
  outDir = DEFAULT_OUT,
  logLevel: InlineConfig["logLevel"] = "warn",
  alias: Alias[] = [],
) {
  await build({
    ...shared(logLevel, alias),
    build: { outDir, emptyOutDir: true, target: "es2022" },
  });
  await build({
    ...shared(logLevel, alias),
    build: {
      outDir,
      emptyOutDir: false,
      copyPublicDir: false,
      target: "es2022",
      lib: { entry: "sw/sw.ts", formats: ["iife"], name: "handoffWorker", fileName: () => "sw.js" },
    },
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  await buildWebApp(process.argv[2] ?? DEFAULT_OUT, "info");
}
