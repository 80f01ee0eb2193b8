import { afterEach, describe, it } from "vitest";
import { ADMIN_TOKEN } from "./app.js";
import { freshPostgres, postgresServer, postgresSkipReason, tempDir, titled } from "./databases.js";

/**
 * Runs a scenario against real server processes twice: on the embedded default (PGlite in a temp
 * DATA_DIR) and on a fresh PostgreSQL database when one is available. `scenario` gets the
 * environment to start them with.
 */
export function onEmbeddedAndPostgres(
  suite: string,
  behaviour: string,
  scenario: (env: Record<string, string>) => Promise<void>,
  timeoutMs: number,
): void {
  describe(suite, () => {
    const cleanups: (() => Promise<void> | void)[] = [];
    afterEach(async () => {
      for (const cleanup of cleanups.splice(0)) await cleanup();
    });

    it(
      `on embedded PGlite: ${behaviour}`,
      async () => {
        const dir = tempDir();
        cleanups.push(() => dir.remove());
        await scenario({ DATA_DIR: dir.path, ADMIN_TOKEN });
      },
      timeoutMs,
    );

    it.skipIf(!postgresServer)(
      titled(`on PostgreSQL: ${behaviour}`, postgresSkipReason),
      async () => {
        const dir = tempDir();
        const database = await freshPostgres(postgresServer as string);
        cleanups.push(
          () => dir.remove(),
          () => database.drop(),
        );
        await scenario({ DATA_DIR: dir.path, ADMIN_TOKEN, DATABASE_URL: database.url });
      },
      timeoutMs,
    );
  });
}
