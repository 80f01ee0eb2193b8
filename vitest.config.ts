import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

export default defineConfig({
  resolve: {
    // Tests run the SDK from its TypeScript sources, as tsc and tsx do (the "source" condition).
    alias: [
      {
        find: /^@handoff\/sdk$/,
        replacement: fileURLToPath(new URL("./packages/sdk/src/index.ts", import.meta.url)),
      },
      {
        find: /^@handoff\/sdk\/(crypto|transparency)$/,
        replacement: fileURLToPath(new URL("./packages/sdk/src/$1/index.ts", import.meta.url)),
      },
      {
        find: /^@handoff\/sdk\/(file-names|upload-rules)$/,
        replacement: fileURLToPath(new URL("./packages/sdk/src/$1.ts", import.meta.url)),
      },
    ],
  },
  test: {
    include: ["test/**/*.test.ts", "packages/*/test/**/*.test.ts"],
    globalSetup: ["test/support/global-setup.ts"],
    // Every HTTP answer in the tests is checked against docs/openapi.json.
    setupFiles: ["test/support/openapi-check-setup.ts"],
    pool: "forks",
    // Two cores here and in CI; each PGlite instance holds a few hundred MB.
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 120_000,
  },
});
