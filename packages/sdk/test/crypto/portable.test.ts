import { readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

// The crypto core is imported unchanged by the browser app: nothing Node-only may creep in.
const folder = new URL("../../src/crypto/", import.meta.url);
const sources = readdirSync(folder).filter((name) => name.endsWith(".ts"));

describe("the crypto core is portable to browsers", () => {
  it("has sources to check", () => {
    expect(sources).toContain("decrypt-stream.ts");
  });

  for (const name of sources) {
    it(`${name} imports only relative modules and @noble, and uses no Node globals`, () => {
      const text = readFileSync(new URL(name, folder), "utf8");
      const imports = [...text.matchAll(/from\s+"([^"]+)"/g)].map((match) => match[1]);
      for (const specifier of imports)
        expect(specifier, specifier).toMatch(/^(\.\/|@noble\/(curves|hashes)\/)/);
      expect(text).not.toMatch(/\b(Buffer|process|require|__dirname)\b/);
    });
  }
});
