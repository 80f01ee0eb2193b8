import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectError } from "../http/helpers.js";
import {
  download,
  downloadOk,
  fetchLink,
  newParties,
  postTransfer,
  sendTransfer,
} from "../http/transfer-helpers.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { postgresServer, postgresSkipReason, titled } from "../support/databases.js";

/**
 * Each server process decides on the states it remembers and answers API keys and agents from
 * rows it remembers (src/command-handlers/snapshots.ts, src/read-models/hot-rows.ts). Two instances on one
 * database: what one changes, the other must honour as soon as it has heard of the append.
 */
describe.skipIf(!postgresServer)(
  titled("remembered states beside a second instance", postgresSkipReason),
  () => {
    let a: TestApp;
    let b: TestApp;

    beforeAll(async () => {
      a = await startTestApp({ database: "postgres" });
      const { databaseUrl, dataDir } = a.service.config;
      b = await startTestApp({ env: { DATABASE_URL: databaseUrl ?? "", DATA_DIR: dataDir } });
    });
    afterAll(async () => {
      await b?.close();
      await a?.close();
    });

    /** Until `on` has applied everything in the log, and so heard of every append before now. */
    async function caughtUp(on: TestApp): Promise<void> {
      const head = await on.service.store.headPosition();
      expect(await on.service.engine.waitFor(head, 5000)).toBe(true);
    }

    it("a link handed out by one stops at once when the other deletes its transfer", async () => {
      const parties = await newParties(a);
      const sent = await sendTransfer(a, parties.apiKey);
      const links = await downloadOk(a, parties.apiKey, sent.id);
      const url = links.files[0]?.download_url as string;
      expect((await fetchLink(a, url)).statusCode).toBe(200);

      const deleted = await b.call("DELETE", `/v1/transfers/${sent.id}`, { key: parties.apiKey });
      expect(deleted.statusCode, deleted.body).toBe(200);
      await caughtUp(a);
      expectError(await fetchLink(a, url), 410, "GONE");
    });

    it("a send answers without waiting for the read models, and a read on either instance right after it shows it", async () => {
      const parties = await newParties(a);
      for (let round = 0; round < 5; round++) {
        const sent = await sendTransfer(a, parties.apiKey);
        for (const reader of [b, a]) {
          const got = await reader.call("GET", `/v1/transfers/${sent.id}`, { key: parties.apiKey });
          expect(got.statusCode, got.body).toBe(200);
        }
        await downloadOk(b, parties.apiKey, sent.id);
        const seen = await a.call("GET", `/v1/transfers/${sent.id}`, { key: parties.apiKey });
        expect(seen.json().downloads).toBe(1);
      }
    });

    it("downloads counted on both are counted once each, up to the limit", async () => {
      const parties = await newParties(a);
      const sent = await sendTransfer(a, parties.apiKey, undefined, { max_downloads: "2" });
      await downloadOk(a, parties.apiKey, sent.id);
      await downloadOk(b, parties.apiKey, sent.id);
      // a remembers the transfer at one download, without waiting to hear of b's.
      expectError(await download(a, parties.apiKey, sent.id), 410, "GONE");
    });

    it("a key revoked on one is refused by the other", async () => {
      const parties = await newParties(a);
      expect((await a.call("GET", "/v1/agents", { key: parties.apiKey })).statusCode).toBe(200);
      const revoked = await b.call("DELETE", `/v1/accounts/${parties.accountId}/api-keys/${parties.keyId}`, {
        key: parties.apiKey,
      });
      expect(revoked.statusCode, revoked.body).toBe(200);
      await caughtUp(a);
      expectError(await a.call("GET", "/v1/agents", { key: parties.apiKey }), 401, "UNAUTHORIZED");
    });

    it("an agent deleted on one is no longer a recipient on the other", async () => {
      const parties = await newParties(a);
      await sendTransfer(a, parties.apiKey);
      const gone = await b.call("DELETE", `/v1/agents/${parties.bob.id}`, { key: parties.apiKey });
      expect(gone.statusCode, gone.body).toBeLessThan(300);
      await caughtUp(a);
      const send = await postTransfer(a, parties.apiKey, [{ name: "f.txt", data: Buffer.from("x") }]);
      expectError(send, 400, "VALIDATION_ERROR");
    });
  },
);
