import { randomBytes } from "node:crypto";
import { mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { postgresServer } from "../../../test/support/databases.js";
import { aliceAndBob } from "./support.js";

/** Every regular file under `root`, by its path relative to `root`, with its bytes. */
function tree(root: string): Map<string, Buffer> {
  const files = new Map<string, Buffer>();
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.isFile()) files.set(relative(root, path), readFileSync(path));
    }
  };
  walk(root);
  return files;
}

describe("sending and receiving a folder (decisions 7.3)", () => {
  // PostgreSQL where there is one: embedded PGlite starts slowly on a loaded machine.
  const world = aliceAndBob({ database: postgresServer ? "postgres" : "pglite" });

  it("sends 200 files in nested folders, hidden ones included and links skipped, and receives them identical", async () => {
    const source = join(world.dir, "source", "project");
    for (let index = 0; index < 200; index++) {
      const folder = join(source, `level-${index % 4}`, `sub-${index % 7}`, index % 2 ? ".hidden" : "plain");
      mkdirSync(folder, { recursive: true });
      writeFileSync(join(folder, `file-${index}.bin`), randomBytes(1 + ((index * 37) % 3000)));
    }
    writeFileSync(join(world.dir, "source", "secret.txt"), "not to be sent");
    symlinkSync(join(world.dir, "source", "secret.txt"), join(source, "link-to-secret.txt"));

    const sent = await world.alice.client.send({ to: "bob", paths: [source] });
    expect(sent.file_count).toBe(200);
    expect(sent.files.every((file) => file.name.startsWith("project/"))).toBe(true);

    const outDir = join(world.dir, "received");
    const received = await world.bob.client.receive(sent.id, { outDir });
    expect(received.files).toHaveLength(200);
    const expected = tree(source);
    const got = tree(join(outDir, "project"));
    expect([...got.keys()].sort()).toEqual([...expected.keys()].sort());
    for (const [name, bytes] of expected) expect(got.get(name)?.equals(bytes), name).toBe(true);
    expect(readdirSync(outDir)).toEqual(["project"]);
  });
});
