/**
 * Writes the Shield corpus (corpus-samples.ts) into a folder with the Node SDK's result for each sample
 * at every level, for the Python client's test to scan the same bytes and compare (decisions 5.6: all
 * clients decide alike). Usage: node --conditions=source --import tsx packages/sdk/test/shield/export-corpus.ts DIR
 */
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { createFileScan, SHIELD_LEVELS, type ShieldResult } from "@handoff/sdk";
import { benign, hostile } from "./corpus-samples.js";

const dir = process.argv[2];
if (!dir) throw new Error("usage: export-corpus.ts DIR");
await mkdir(dir, { recursive: true });
const manifest = [];
for (const [index, sample] of [...hostile, ...benign].entries()) {
  const file = `sample-${index}.bin`;
  const path = join(dir, file);
  await writeFile(path, sample.data);
  const node: Record<string, ShieldResult> = {};
  for (const level of SHIELD_LEVELS) {
    const scan = createFileScan(level, { name: sample.name, declaredType: sample.declaredType ?? null });
    scan.observe(sample.data);
    node[level] = await scan.finish(path);
  }
  manifest.push({
    file,
    name: sample.name,
    declared_type: sample.declaredType ?? null,
    expected_kinds: sample.kinds,
    node,
  });
}
await writeFile(join(dir, "manifest.json"), `${JSON.stringify(manifest, null, 2)}\n`);
