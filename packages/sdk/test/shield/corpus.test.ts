/**
 * The Shield corpus: hostile and benign files built from bytes, each scanned at every level and in several
 * chunkings (whole, 1, 7 and 65536 bytes), which must all give the same result.
 */
import { mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createFileScan, SHIELD_LEVELS, type ShieldLevel, type ShieldResult } from "@handoff/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { benign, hostile, type Sample } from "./corpus-samples.js";

const chunkings: [string, number][] = [
  ["whole", Number.POSITIVE_INFINITY],
  ["1-byte", 1],
  ["7-byte", 7],
  ["65536-byte", 65536],
];

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "shield-corpus-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function scan(sample: Sample, level: ShieldLevel, chunk: number): Promise<ShieldResult> {
  const path = join(dir, "received.tmp");
  await writeFile(path, sample.data);
  const file = createFileScan(level, { name: sample.name, declaredType: sample.declaredType ?? null });
  for (let at = 0; at < sample.data.length; at += chunk) file.observe(sample.data.subarray(at, at + chunk));
  return file.finish(path);
}

function checkSample(sample: Sample) {
  return async () => {
    const scanned = SHIELD_LEVELS.filter((l) => l !== "off");
    expect(scanned).toEqual(["permissive", "standard", "strict", "paranoid"]);
    for (const [i, level] of scanned.entries()) {
      const results: ShieldResult[] = [];
      for (const [, size] of chunkings) results.push(await scan(sample, level, size));
      const [first, ...others] = results;
      expect(first?.findings.map((f) => f.kind).sort(), `kinds at ${level}`).toEqual(
        [...sample.kinds].sort(),
      );
      expect(first?.verdict, `verdict at ${level}`).toBe(sample.verdicts[i]);
      expect(first?.level).toBe(level);
      if (sample.detail !== undefined) expect(first?.findings[0]?.detail).toContain(sample.detail);
      for (const [j, other] of others.entries())
        expect(other, `${chunkings[j + 1]?.[0]} at ${level}`).toEqual(first);
    }
    const off = await scan(sample, "off", 7);
    expect(off).toEqual({ level: "off", verdict: "unscanned", findings: [] });
    expect(await readdir(dir)).toEqual(["received.tmp"]);
  };
}

describe("Shield corpus: hostile samples", () => {
  for (const sample of hostile) {
    it(`${sample.name} (${sample.kinds.join(", ")})`, checkSample(sample));
  }
});

describe("Shield corpus: benign samples have no finding at any level, paranoid included", () => {
  for (const sample of benign) {
    it(sample.name, checkSample(sample));
  }
});
