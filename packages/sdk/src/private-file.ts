import { randomBytes } from "node:crypto";
import { link, mkdir, open, rename, rm } from "node:fs/promises";
import { dirname } from "node:path";

/**
 * Writes `text` to `path` with mode 0600, atomically: a reader sees the old file or the new one,
 * never half of it, and a crash leaves at most a stray temporary beside it. With `replace: false`
 * an existing `path` is never replaced, even one another process made a moment ago (the temporary
 * is linked to it, which fails with EEXIST, instead of renamed over it).
 */
export async function writePrivateFile(
  path: string,
  text: string,
  { replace = true }: { replace?: boolean } = {},
): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const temp = `${path}.${randomBytes(6).toString("hex")}.tmp`;
  try {
    const handle = await open(temp, "wx", 0o600);
    try {
      await handle.writeFile(text, "utf8");
      await handle.sync();
    } finally {
      await handle.close();
    }
    if (replace) await rename(temp, path);
    else await link(temp, path);
  } catch (error) {
    await rm(temp, { force: true });
    throw error;
  }
  if (!replace) await rm(temp, { force: true });
}
