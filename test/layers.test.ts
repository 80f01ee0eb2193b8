import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, normalize, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";

/**
 * The layers of the server, top to bottom (docs/design.md, "Layers"). A module may import from its
 * own layer and the layers below it, never from one above: the web stays out of the use cases, the
 * read side out of the write side, and domain/ stays pure. Each entry is a folder or a file,
 * relative to the repository; the longest entry that contains a file decides its layer.
 */
const LAYERS: { name: string; members: string[] }[] = [
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
      "src/running-server.ts",
      "src/cli-errors.ts",
      "src/client",
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
      "src/streaming-heap.ts",
      "migrations",
    ],
  },
  // The public API's named schemas and operations: the HTTP edge serves them, the SDK's types come from them.
  { name: "contract", members: ["src/contract"] },
  // Projections fold domain events into rows and import only domain/: src/ reads them, never the reverse.
  { name: "projections", members: ["projections"] },
  { name: "domain", members: ["domain"] },
];

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const SCANNED = ["src", "projections", "domain", "migrations"];

function sources(folder: string): string[] {
  return readdirSync(join(ROOT, folder), { withFileTypes: true }).flatMap((entry) => {
    const path = `${folder}/${entry.name}`;
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith(".ts") ? [path] : [];
  });
}

/** The layer index of a repository-relative path, or null when it is in no layer (a package). */
function layerOf(path: string): number | null {
  let best: { index: number; length: number } | null = null;
  LAYERS.forEach((layer, index) => {
    for (const member of layer.members) {
      const inside = path === member || path.startsWith(`${member}/`);
      if (inside && (!best || member.length > best.length)) best = { index, length: member.length };
    }
  });
  return (best as { index: number } | null)?.index ?? null;
}

/** Every relative import of a file (static, dynamic, type-only and re-exports), as repository paths. */
function importsOf(path: string): string[] {
  const { importedFiles } = ts.preProcessFile(readFileSync(join(ROOT, path), "utf8"), true, true);
  return importedFiles
    .map((imported) => imported.fileName)
    .filter((name) => name.startsWith("."))
    .map((name) =>
      relative(ROOT, normalize(join(ROOT, dirname(path), name)))
        .split(sep)
        .join("/"),
    );
}

interface Arrow {
  from: string;
  to: string;
}

/** Imports that point from a lower layer up to a higher one, in a graph of file → its imports. */
function arrowsUp(graph: Map<string, string[]>): Arrow[] {
  return [...graph].flatMap(([from, imports]) => {
    const own = layerOf(from);
    if (own === null) return [];
    return imports
      .filter((to) => {
        const target = layerOf(to);
        return target !== null && target < own;
      })
      .map((to) => ({ from, to }));
  });
}

const describeArrow = ({ from, to }: Arrow) =>
  `${from} (${LAYERS[layerOf(from) ?? 0]?.name}) imports ${to} (${LAYERS[layerOf(to) ?? 0]?.name})`;

describe("layers", () => {
  const files = SCANNED.flatMap(sources);
  const graph = new Map(files.map((file) => [file, importsOf(file)]));

  it("puts every server source file in a layer", () => {
    expect(files.filter((file) => layerOf(file) === null)).toEqual([]);
  });

  it("has no import pointing up a layer", () => {
    expect(arrowsUp(graph).map(describeArrow)).toEqual([]);
  });

  it("finds an arrow that points up, and lets one point down", () => {
    const made = new Map([
      ["src/command-handlers/transfers/send.ts", ["src/http/errors.ts", "domain/transfer.ts"]],
      ["projections/transfers.ts", ["src/privacy/personal-data.ts"]],
    ]);
    expect(arrowsUp(made)).toEqual([
      { from: "src/command-handlers/transfers/send.ts", to: "src/http/errors.ts" },
      { from: "projections/transfers.ts", to: "src/privacy/personal-data.ts" },
    ]);
    expect(layerOf("src/client/commands/send.ts")).toBe(0);
    expect(layerOf("src/command-handlers/transfers/send.ts")).toBe(4);
  });
});
