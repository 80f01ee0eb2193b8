/**
 * Compiles Shield's SIMD prefilter, src/shield/prefilter.wat, into src/shield/prefilter-wasm.ts (the module's
 * bytes in base64), so the SDK needs no build step or file loading at run time. wabt's wat2wasm is the
 * reference WebAssembly text assembler; a test fails when the committed module no longer matches its source.
 *
 *   npm run build:prefilter
 */
import { readFile, writeFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import wabt from "wabt";

const source = fileURLToPath(new URL("../src/shield/prefilter.wat", import.meta.url));
export const generatedPath = fileURLToPath(new URL("../src/shield/prefilter-wasm.ts", import.meta.url));

/** The text of prefilter-wasm.ts for the current prefilter.wat. */
export async function prefilterModuleSource(): Promise<string> {
  const assembler = await wabt();
  const parsed = assembler.parseWat("prefilter.wat", await readFile(source, "utf8"), { simd: true });
  try {
    parsed.validate();
    const { buffer } = parsed.toBinary({});
    const base64 = Buffer.from(buffer).toString("base64");
    // As biome formats it, so that checking the tree changes nothing.
    return (
      "// Generated from prefilter.wat by `npm run build:prefilter`: do not edit.\n" +
      `export const prefilterWasm =\n  "${base64}";\n`
    );
  } finally {
    parsed.destroy();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  await writeFile(generatedPath, await prefilterModuleSource());
  console.log(`wrote ${generatedPath}`);
}
