import { randomBytes } from "node:crypto";
import { PassThrough, Readable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FileSystemBlobStore } from "../../src/blobs/filesystem.js";
import { LocalBlobUrls } from "../../src/blobs/local-urls.js";
import { UploadLockedError, type UploadTarget } from "../../src/blobs/resumable/port.js";
import { UploadLeases } from "../../src/db/upload-leases.js";
import { UrlTokens } from "../../src/security/url-tokens.js";
import { migratedDatabase, postgresServer, type TestDatabase, tempDir } from "../support/databases.js";

const MiB = 1024 * 1024;
const links = new LocalBlobUrls(new UrlTokens(randomBytes(32)), "http://handoff.test");

let keys = 0;
function targetOf(length: number): UploadTarget {
  keys++;
  return {
    key: `transfers/tr_lease${keys}/f_file`,
    length,
    contentType: "application/octet-stream",
    expiresAt: new Date(Date.now() + 3600_000),
  };
}

const body = (data: Buffer) => Readable.from([data]);

/**
 * Two instances on one blob folder and one database (issue 34): each has its own store, its own
 * in-process locks, and the lease table they share.
 */
for (const kind of ["pglite", ...(postgresServer ? ["postgres" as const] : [])] as const) {
  describe(`tus upload leases across instances (${kind})`, () => {
    let database: TestDatabase;
    const dir = tempDir("handoff-leases-");
    let first: FileSystemBlobStore;
    let second: FileSystemBlobStore;
    beforeAll(async () => {
      database = await migratedDatabase(kind);
      first = new FileSystemBlobStore(dir.path, links, new UploadLeases(database.db));
      second = new FileSystemBlobStore(dir.path, links, new UploadLeases(database.db));
    });
    afterAll(async () => {
      await database.close();
      dir.remove();
    });

    it("a request on another instance stops a PATCH in flight, which commits, and sees its durable offset", async () => {
      const target = targetOf(4 * MiB);
      const stream = new PassThrough();
      const inFlight = first.resumable.append(
        target,
        { offset: 0, body: stream, checksum: null, interimCommits: false },
        () => stream.destroy(),
      );
      const outcome = inFlight.then(
        () => "finished",
        () => "stopped",
      );
      stream.write(randomBytes(MiB));
      await new Promise((resolve) => setTimeout(resolve, 200));
      // The second instance asks for the upload: the first stops reading, commits what it got, lets go.
      expect(await second.resumable.offset(target)).toBe(MiB);
      expect(await outcome).toBe("stopped");
      const rest = randomBytes(3 * MiB);
      const appended = await second.resumable.append(
        target,
        { offset: MiB, body: body(rest), checksum: null, interimCommits: false },
        () => {},
      );
      expect(appended).toBe(4 * MiB);
    });

    it("while a killed instance's lease lives, another answers locked and writes nothing; once it lapses, it writes", async () => {
      const target = targetOf(MiB);
      const leases = new UploadLeases(database.db);
      // A holder that never renews nor releases: an instance killed mid-PATCH.
      expect(await leases.take(target.key, "killed", 60_000)).toBe(true);
      const locked = await second.resumable
        .append(
          target,
          { offset: 0, body: body(randomBytes(MiB)), checksum: null, interimCommits: false },
          () => {},
        )
        .catch((error: unknown) => error);
      expect(locked).toBeInstanceOf(UploadLockedError);
      expect((locked as UploadLockedError).retryAfterSeconds).toBeGreaterThan(0);
      await leases.release(target.key, "killed");
      expect(await leases.take(target.key, "killed again", 50)).toBe(true);
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(await first.resumable.offset(target)).toBe(0);
      const data = randomBytes(MiB);
      expect(
        await first.resumable.append(
          target,
          { offset: 0, body: body(data), checksum: null, interimCommits: false },
          () => {},
        ),
      ).toBe(MiB);
    }, 20_000);

    it("a released lease is free at once, and a live one is not taken over", async () => {
      const leases = new UploadLeases(database.db);
      const key = targetOf(1).key;
      expect(await leases.take(key, "a", 60_000)).toBe(true);
      expect(await leases.take(key, "b", 60_000)).toBe(false);
      expect(await leases.renew(key, "a", 60_000)).toBe("wanted");
      expect(await leases.renew(key, "b", 60_000)).toBe("lost");
      expect(await leases.alive()).toContain(key);
      await leases.release(key, "a");
      expect(await leases.alive()).not.toContain(key);
      expect(await leases.take(key, "b", 60_000)).toBe(true);
      expect(await leases.renew(key, "b", 60_000)).toBe("held");
    });
  });
}
