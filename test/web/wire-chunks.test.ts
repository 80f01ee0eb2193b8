import { randomBytes } from "node:crypto";
import { createEncryptStream, newContentKey } from "@handoff/sdk";
import { describe, expect, it } from "vitest";
import { wireChunks } from "../../web/src/wire-chunks.js";

const RECORD = 65536;
const WIRE_RECORD = RECORD + 16;

async function wireFrom(file: Blob, key: Uint8Array, salt: Uint8Array, offset: number): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const chunk of wireChunks(file, key, salt, offset))
    parts.push(Buffer.from(await chunk.arrayBuffer()));
  return Buffer.concat(parts);
}

describe("the web app's resumed upload (decisions 7.2)", () => {
  it("sends from any wire offset exactly the rest of the bytes a whole upload sends", async () => {
    const plain = randomBytes(70 * RECORD + 123);
    const file = new Blob([plain]);
    const key = newContentKey();
    const salt = randomBytes(16);
    const { stream } = createEncryptStream(key, { salt });
    const whole = Buffer.from(
      await new Response(new Blob([plain]).stream().pipeThrough(stream)).arrayBuffer(),
    );
    expect((await wireFrom(file, key, salt, 0)).equals(whole)).toBe(true);
    // In the header, on a record's first byte, inside a record, inside a tag, in the last record.
    for (const offset of [
      10,
      24 + WIRE_RECORD,
      24 + 3 * WIRE_RECORD + 500,
      24 + 5 * WIRE_RECORD - 3,
      whole.length - 7,
    ])
      expect((await wireFrom(file, key, salt, offset)).equals(whole.subarray(offset)), String(offset)).toBe(
        true,
      );
  });
});
