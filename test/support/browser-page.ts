/** What the browser tests share: pictures for the docs, waiting on what a page reports, tus PATCHes held. */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { Locator, Page } from "playwright-core";

/** Set (npm run screenshots) to write a picture of each page into that folder. */
const SCREENSHOTS = process.env.HANDOFF_SCREENSHOTS;

/** A picture of the whole page, named `name`, when pictures are asked for. */
export async function snap(page: Page, name: string): Promise<void> {
  if (!SCREENSHOTS) return;
  mkdirSync(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true });
}

/** A picture of one part of a page (a settings section). */
export async function snapPart(part: Locator, name: string): Promise<void> {
  if (!SCREENSHOTS) return;
  mkdirSync(SCREENSHOTS, { recursive: true });
  await part.screenshot({ path: join(SCREENSHOTS, `${name}.png`) });
}

/** Waits for `success` to show; an error the page reports instead fails at once, in its words. */
export async function until(page: Page, success: Locator): Promise<void> {
  const failed = page.locator('main .status[data-kind="error"]').first();
  await Promise.race([
    success.first().waitFor({ timeout: 60_000 }),
    failed.waitFor({ timeout: 60_000 }).then(async () => {
      throw new Error(`the page reported: ${await failed.textContent()}`);
    }),
  ]);
}

/** Waits until a live region in `scope` reports success saying `text`. */
export function statusSays(page: Page, text: string, scope = page.locator("main")): Promise<void> {
  return until(page, scope.locator('.status[data-kind="ok"]', { hasText: text }));
}

/** The progress line of an upload under way: bytes of `total`, the speed and the time left. */
export const uploadingLine = (page: Page, total: string) =>
  page.locator("main .status", {
    hasText: new RegExp(`^Uploading: [\\d.]+ MB of ${total} · [\\d.]+ MB/s · \\d+ s left$`),
  });

/**
 * Intercepts the page's tus PATCHes: each one let through is recorded (its offset and size) and
 * slowed a little (the progress line measures a speed only after 0.2 s), and the `hold`-th is
 * held until `release`, then dropped, as a reload drops a request under way.
 */
export async function interceptPatches(page: Page, hold: number) {
  const patches: { offset: number; bytes: number }[] = [];
  let held: () => void = () => {};
  const holding = new Promise<void>((resolve) => {
    held = resolve;
  });
  let release: () => void = () => {};
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  let seen = 0;
  await page.route("**/v1/uploads/**", async (route) => {
    const request = route.request();
    if (request.method() !== "PATCH") return route.continue();
    if (++seen === hold) {
      held();
      await released;
      return route.abort().catch(() => {});
    }
    patches.push({
      offset: Number(request.headers()["upload-offset"]),
      bytes: request.postDataBuffer()?.length ?? 0,
    });
    await new Promise((resolve) => setTimeout(resolve, 300));
    return route.continue();
  });
  return { patches, holding, release };
}
