import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type BrowserContext, chromium } from "playwright-core";

/** Debian's chromium package; never a downloaded browser. */
export const CHROMIUM = "/usr/bin/chromium";

export const chromiumSkipReason = existsSync(CHROMIUM)
  ? ""
  : `no ${CHROMIUM}: install Debian's chromium package (apt-get install -y chromium); .ci/run does`;

const ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--no-first-run",
  "--disable-quic",
  "--disable-sync",
];

export interface Browser {
  context: BrowserContext;
  /** The fresh profile folder, which also names the browser's processes. */
  profile: string;
  close(): Promise<void>;
}

/** Headless Chromium with a fresh profile, which is thrown away on close. */
export async function launchChromium(): Promise<Browser> {
  const profile = mkdtempSync(join(tmpdir(), "handoff-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: ARGS,
    acceptDownloads: true,
    viewport: { width: 1100, height: 800 },
  });
  return {
    context,
    profile,
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
