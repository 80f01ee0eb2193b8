import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { expect, it } from "vitest";
import { SERVE_NODE_FLAG } from "../../bench/support.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const read = (path: string) => readFileSync(join(ROOT, path), "utf8");

/**
 * Node takes its V8 helper threads' count only on its command line, so each way of starting the
 * server says it: the image, `npm start`, the installed `handoff` command and the benchmarks (which
 * must measure the server as it is run). docs/deployment.md says why.
 */
it("starts the server with the same Node flags however it is started", () => {
  expect(SERVE_NODE_FLAG).toBe("--v8-pool-size=0");
  const cmd = read("Dockerfile")
    .split("\n")
    .filter((line) => line.startsWith("CMD "));
  expect(cmd).toEqual([`CMD ["node", "${SERVE_NODE_FLAG}", "dist/src/cli.js", "serve"]`]);
  const scripts = (JSON.parse(read("package.json")) as { scripts: Record<string, string> }).scripts;
  expect(scripts.start).toBe(`npm run build --silent && node ${SERVE_NODE_FLAG} dist/src/cli.js serve`);
  expect(read("src/cli.ts").split("\n")[0]).toBe(`#!/usr/bin/env -S node ${SERVE_NODE_FLAG}`);
  expect(read("docs/deployment.md")).toContain(SERVE_NODE_FLAG);
});
