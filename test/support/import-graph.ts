import { readdirSync, readFileSync } from "node:fs";
import { join, posix } from "node:path";
import ts from "typescript";

/** Each source file (a repository path) with the repository paths it imports. */
export type ImportGraph = Map<string, string[]>;

/** Folders never scanned: installed packages and build output. */
const SKIPPED = new Set(["node_modules", "dist"]);

/** The TypeScript files under a repository folder, as repository paths. */
export function sourcesUnder(root: string, folder: string): string[] {
  return readdirSync(join(root, folder), { withFileTypes: true }).flatMap((entry) => {
    const path = `${folder}/${entry.name}`;
    if (entry.isDirectory()) return SKIPPED.has(entry.name) ? [] : sourcesUnder(root, path);
    return entry.name.endsWith(".ts") && !entry.name.endsWith(".d.ts") ? [path] : [];
  });
}

/**
 * Where an import of `from` points, as a repository path: a relative specifier from its folder, the
 * SDK's package name (`@handoff/sdk`, `@handoff/sdk/crypto`) to its sources; null for any other package.
 */
function target(from: string, specifier: string): string | null {
  if (specifier.startsWith(".")) return posix.normalize(posix.join(posix.dirname(from), specifier));
  const sdk = /^@handoff\/sdk(?:\/(.+))?$/.exec(specifier);
  return sdk ? `packages/sdk/src/${sdk[1] ?? "index"}` : null;
}

/** The scanned file an import path names (`x.js` is `x.ts`, a folder its `index.ts`), else the path itself. */
function fileOf(path: string, files: ReadonlySet<string>): string {
  const candidates = [path.replace(/\.js$/, ".ts"), path, `${path}.ts`, `${path}/index.ts`];
  return candidates.find((candidate) => files.has(candidate)) ?? path;
}

/** Every import of a file's text (static, dynamic, type-only and re-exports) that points into the repository. */
export function importsOf(path: string, text: string, files: ReadonlySet<string>): string[] {
  const { importedFiles } = ts.preProcessFile(text, true, true);
  return importedFiles.flatMap(({ fileName }) => {
    const to = target(path, fileName);
    return to === null ? [] : [fileOf(to, files)];
  });
}

/** The import graph of files read from disk under `root`. */
export function readGraph(root: string, files: string[]): ImportGraph {
  const known = new Set(files);
  return new Map(files.map((file) => [file, importsOf(file, readFileSync(join(root, file), "utf8"), known)]));
}

/**
 * The circles among files of the same group (a layer): each as the files along it, back to the
 * first. Tarjan's strongly connected components over the edges that stay inside a group; from
 * each component one circle is walked, from its first file by name, so the report stays the same.
 */
export function circles(graph: ImportGraph, groupOf: (file: string) => string | null): string[][] {
  const inside = (from: string) =>
    (graph.get(from) ?? []).filter(
      (to) => graph.has(to) && groupOf(to) !== null && groupOf(to) === groupOf(from),
    );
  const index = new Map<string, number>();
  const lowest = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];

  const visit = (file: string) => {
    index.set(file, index.size);
    lowest.set(file, index.get(file) as number);
    stack.push(file);
    onStack.add(file);
    for (const to of inside(file)) {
      if (!index.has(to)) {
        visit(to);
        lowest.set(file, Math.min(lowest.get(file) as number, lowest.get(to) as number));
      } else if (onStack.has(to))
        lowest.set(file, Math.min(lowest.get(file) as number, index.get(to) as number));
    }
    if (lowest.get(file) !== index.get(file)) return;
    const component = new Set<string>();
    for (let member = stack.pop(); member !== undefined; member = stack.pop()) {
      onStack.delete(member);
      component.add(member);
      if (member === file) break;
    }
    if (component.size > 1 || inside(file).includes(file))
      found.push(walk([...component].sort()[0] as string, component, inside));
  };
  for (const file of [...graph.keys()].sort()) if (!index.has(file)) visit(file);
  return found;
}

/** A shortest path from `start` back to itself through the files of one component (breadth first). */
function walk(start: string, component: ReadonlySet<string>, inside: (file: string) => string[]): string[] {
  const cameFrom = new Map<string, string>();
  const queue = [start];
  for (let file = queue.shift(); file !== undefined; file = queue.shift()) {
    for (const to of inside(file).filter((next) => component.has(next))) {
      if (to === start) {
        const path = [start];
        for (
          let step: string | undefined = file;
          step !== start && step !== undefined;
          step = cameFrom.get(step)
        )
          path.splice(1, 0, step);
        return [...path, start];
      }
      if (!cameFrom.has(to)) {
        cameFrom.set(to, file);
        queue.push(to);
      }
    }
  }
  return [start, start];
}
