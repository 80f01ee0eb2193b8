import { Worker } from "node:worker_threads";

/** The transparency log's worker files, beside this one. */
export type TransparencyThreadFile = "leaf-thread" | "hasher-thread";

/**
 * A worker thread running one of the log's worker files: the compiled one from the build, or from
 * the TypeScript sources (the tests run them), where the thread registers tsx's loader before
 * importing the file: a worker does not take `--import` loaders.
 */
export function transparencyThread(file: TransparencyThreadFile, workerData: unknown): Worker {
  if (!import.meta.url.endsWith(".ts")) {
    return new Worker(new URL(`./${file}.js`, import.meta.url), { workerData });
  }
  const [tsx, entry] = [import.meta.resolve("tsx/esm/api"), new URL(`./${file}.ts`, import.meta.url).href];
  const bootstrap = `import(${JSON.stringify(tsx)}).then(({ register }) => { register(); return import(${JSON.stringify(entry)}); });`;
  return new Worker(bootstrap, { eval: true, workerData, execArgv: ["--conditions=source"] });
}
