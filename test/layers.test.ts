import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { circles, type ImportGraph, importsOf, readGraph, sourcesUnder } from "./support/import-graph.js";

/**
 * The server's layers, top to bottom (docs/design.md, "Layers"). A module may import from its own
 * layer and the layers below it, never from one above: the web stays out of the use cases, the
 * read side out of the write side, and domain/ stays pure. Each entry is a folder or a file,
 * relative to the repository; the longest entry that contains a file decides its layer.
 */
const SERVER: { name: string; members: string[] }[] = [
  {
    name: "entry points",
    members: [
      "src/cli.ts",
      "src/cli-program.ts",
      "src/cli-completion.ts",
      "src/version.ts",
      "src/server-cli.ts",
      "src/server-commands.ts",
      "src/outbox-cli.ts",
      "src/startup-line.ts",
      "src/progress-line.ts",
      "src/running-server.ts",
    ],
  },
  { name: "HTTP edge", members: ["src/http"] },
  { name: "composition root", members: ["src/service.ts"] },
  { name: "background processes", members: ["src/housekeeping", "src/reactors"] },
  { name: "command handlers", members: ["src/command-handlers"] },
  { name: "read side", members: ["src/queries", "src/read-models"] },
  {
    name: "infrastructure",
    members: [
      "src/eventstore",
      "src/blobs",
      "src/db",
      "src/security",
      "src/privacy",
      "src/mail",
      "src/rate-limits",
      "src/observability",
      "src/transparency",
      "src/sdk",
      "src/clock.ts",
      "src/config.ts",
      "src/process-runs.ts",
      "migrations",
    ],
  },
  // The public API's named schemas and operations: the HTTP edge serves them, the SDK's types come from them.
  { name: "contract", members: ["src/contract"] },
  // Projections fold domain events into rows and import only domain/: src/ reads them, never the reverse.
  { name: "projections", members: ["projections"] },
  { name: "domain", members: ["domain"] },
];

const CLIENT = "user's CLI and MCP server";
const SDK = "SDK";

/**
 * Every layer with the layers it may import besides its own. The server's use the ones below them
 * and the SDK (the same encryption); its entry points also mount the user's CLI, which runs on the
 * user's machine and so reaches the server only over HTTP: it uses the SDK and the contract (the
 * wire's schemas), never a server module. The CLI's error line and heap tuning are shared with the
 * server's commands, so they sit in the CLI's layer, below the entry points. The SDK is a package
 * of its own (it imports nothing of the repository's), and the web app uses only the SDK.
 */
const LAYERS: { name: string; members: string[]; uses: string[] }[] = [
  ...SERVER.map((layer, index) => ({
    ...layer,
    uses: [...SERVER.slice(index + 1).map(({ name }) => name), SDK, ...(index === 0 ? [CLIENT] : [])],
  })),
  {
    name: CLIENT,
    members: ["src/client", "src/cli-errors.ts", "src/streaming-heap.ts"],
    uses: ["contract", SDK],
  },
  { name: "web app", members: ["web"], uses: [SDK] },
  { name: SDK, members: ["packages/sdk"], uses: [] },
];

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const SCANNED = ["src", "projections", "domain", "migrations", "packages/sdk", "web"];

/** The layer of a repository path, or null when it is in none (a file outside the scanned folders). */
function layerOf(path: string): string | null {
  let best: { name: string; length: number } | null = null;
  for (const { name, members } of LAYERS)
    for (const member of members) {
      const inside = path === member || path.startsWith(`${member}/`);
      if (inside && (!best || member.length > best.length)) best = { name, length: member.length };
    }
  return best?.name ?? null;
}

interface Arrow {
  from: string;
  to: string;
}

/** Imports from one layer into another that it may not use. */
function forbiddenArrows(graph: ImportGraph): Arrow[] {
  return [...graph].flatMap(([from, imports]) => {
    const own = LAYERS.find(({ name }) => name === layerOf(from));
    if (!own) return [];
    return imports
      .filter((to) => {
        const target = layerOf(to);
        return target !== null && target !== own.name && !own.uses.includes(target);
      })
      .map((to) => ({ from, to }));
  });
}

const describeArrow = ({ from, to }: Arrow) => `${from} (${layerOf(from)}) imports ${to} (${layerOf(to)})`;
const describeCircle = (files: string[]) => `circle in ${layerOf(files[0] as string)}: ${files.join(" → ")}`;

/** Everything the guard finds wrong in a graph: forbidden arrows, then circles inside a layer. */
const problems = (graph: ImportGraph) => [
  ...forbiddenArrows(graph).map(describeArrow),
  ...circles(graph, layerOf).map(describeCircle),
];

describe("layers", () => {
  const files = SCANNED.flatMap((folder) => sourcesUnder(ROOT, folder));
  const known = new Set(files);
  const graph = readGraph(ROOT, files);

  /** The repository's graph with one more import line planted in a file's source (in memory only). */
  const planted = (file: string, line: string): ImportGraph => {
    const text = `${line}\n${readFileSync(join(ROOT, file), "utf8")}`;
    return new Map([...graph, [file, importsOf(file, text, known)]]);
  };

  it("puts every source file in a layer", () => {
    expect(files.filter((file) => layerOf(file) === null)).toEqual([]);
    expect(files).toContain("packages/sdk/src/index.ts");
    expect(files).toContain("web/src/main.ts");
  });

  it("has no import into a layer a module may not use", () => {
    expect(forbiddenArrows(graph).map(describeArrow)).toEqual([]);
  });

  it("has no circle of imports inside a layer", () => {
    expect(circles(graph, layerOf).map(describeCircle)).toEqual([]);
  });

  it("reads the SDK's package name as its sources, and lets a layer import down", () => {
    expect(importsOf("src/client/x.ts", 'import { a } from "@handoff/sdk/crypto";', known)).toEqual([
      "packages/sdk/src/crypto/index.ts",
    ]);
    const made = new Map([
      ["src/command-handlers/transfers/send.ts", ["domain/transfer.ts", "packages/sdk/src/index.ts"]],
      ["web/src/api.ts", ["packages/sdk/src/crypto/index.ts", "web/src/dom.ts"]],
    ]);
    expect(problems(made)).toEqual([]);
  });

  it("fails on an import from the user's CLI into the HTTP edge, naming the file", () => {
    const graph = planted("src/client/commands/send.ts", 'import { sendError } from "../../http/errors.js";');
    expect(problems(graph)).toEqual([
      "src/client/commands/send.ts (user's CLI and MCP server) imports src/http/errors.ts (HTTP edge)",
    ]);
  });

  it("fails on an import from the SDK into the server, and from the web app into it", () => {
    expect(problems(planted("packages/sdk/src/client.ts", 'import "../../../src/service.js";'))).toEqual([
      "packages/sdk/src/client.ts (SDK) imports src/service.ts (composition root)",
    ]);
    expect(
      problems(planted("web/src/api.ts", 'import type { Transfer } from "../../src/contract/transfers.js";')),
    ).toEqual(["web/src/api.ts (web app) imports src/contract/transfers.ts (contract)"]);
  });

  it("fails on an import pointing up the server's layers", () => {
    const graph = planted("src/command-handlers/transfers/send.ts", 'export * from "../../http/errors.js";');
    expect(problems(graph)).toEqual([
      "src/command-handlers/transfers/send.ts (command handlers) imports src/http/errors.ts (HTTP edge)",
    ]);
  });

  it("fails on a circle inside a layer, naming each file along it", () => {
    const graph = planted("src/blobs/port.ts", 'import type { FileSystemBlobStore } from "./filesystem.js";');
    expect(problems(graph)).toEqual([
      "circle in infrastructure: src/blobs/byte-streams.ts → src/blobs/port.ts → src/blobs/filesystem.ts → src/blobs/byte-streams.ts",
    ]);
    const made = new Map([
      ["domain/a.ts", ["domain/b.ts"]],
      ["domain/b.ts", ["domain/c.ts"]],
      ["domain/c.ts", ["domain/a.ts"]],
      ["domain/d.ts", ["domain/d.ts"]],
    ]);
    expect(circles(made, layerOf)).toEqual([
      ["domain/a.ts", "domain/b.ts", "domain/c.ts", "domain/a.ts"],
      ["domain/d.ts", "domain/d.ts"],
    ]);
  });
});
