import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
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

/** One PATCH of `data` from offset 0 through `store`: its new offset, or what it failed with. */
const appendFromStart = (store: FileSystemBlobStore, target: UploadTarget, data: Buffer) =>
  store.resumable
    .append(target, { offset: 0, body: body(data), checksum: null, interimCommits: false }, () => {})
    .catch((error: unknown) => error);

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
      expect(await leases.take(target.key, "killed", 60_000)).toBe("killed");
      const locked = await appendFromStart(second, target, randomBytes(MiB));
      expect(locked).toBeInstanceOf(UploadLockedError);
      expect((locked as UploadLockedError).retryAfterSeconds).toBeGreaterThan(0);
      await leases.release(target.key, "killed");
      expect(await leases.take(target.key, "killed again", 50)).toBe("killed again");
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(await first.resumable.offset(target)).toBe(0);
      const data = randomBytes(MiB);
      expect(await appendFromStart(first, target, data)).toBe(MiB);
    }, 20_000);

    it("a released lease is free at once, and a live one is not taken over", async () => {
      const leases = new UploadLeases(database.db);
      const key = targetOf(1).key;
      expect(await leases.take(key, "a", 60_000)).toBe("a");
      expect(await leases.take(key, "b", 60_000)).toBe("a");
      expect(await leases.renew(key, "a", 60_000)).toBe("wanted");
      expect(await leases.renew(key, "b", 60_000)).toBe("lost");
      expect(await leases.alive()).toContain(key);
      await leases.release(key, "a");
      expect(await leases.alive()).not.toContain(key);
      expect(await leases.take(key, "b", 60_000)).toBe("b");
      expect(await leases.renew(key, "b", 60_000)).toBe("held");
    });

    it("a lease whose holder no longer runs on this host is taken over at once, its holder told it lost it", async () => {
      const leases = new UploadLeases(database.db);
      // A process of this host that has ended, and an earlier life of this very pid (a restarted
      // container's server is pid 1 again): neither can write any more.
      const ended = spawnSync(process.execPath, ["-e", ""]).pid;
      for (const gone of [
        `${hostname()}/${ended}/0123456789ab/lease`,
        `${hostname()}/${process.pid}/000000000000/lease`,
      ]) {
        const target = targetOf(MiB);
        expect(await leases.take(target.key, gone, 60_000)).toBe(gone);
        const data = randomBytes(MiB);
        const started = Date.now();
        expect(await appendFromStart(second, target, data)).toBe(MiB);
        // Taken at once, not after the 3 s a live holder is waited for, nor the 60 s of its lease.
        expect(Date.now() - started).toBeLessThan(2000);
        expect(await leases.renew(target.key, gone, 60_000)).toBe("lost");
      }
    });

    it("a holder on another host, or alive on this one, is waited out: 423 and nothing written", async () => {
      const leases = new UploadLeases(database.db);
      for (const alive of [
        `elsewhere.example/${process.pid}/0123456789ab/lease`,
        `${hostname()}/${process.ppid}/0123456789ab/lease`,
      ]) {
        const target = targetOf(MiB);
        expect(await leases.take(target.key, alive, 60_000)).toBe(alive);
        const locked = await appendFromStart(second, target, randomBytes(MiB));
        expect(locked).toBeInstanceOf(UploadLockedError);
        expect(await leases.renew(target.key, alive, 60_000)).toBe("wanted");
        await leases.release(target.key, alive);
        expect(await first.resumable.offset(target)).toBe(0);
      }
    }, 20_000);

    it("of two instances taking over one gone holder, one wins", async () => {
      const leases = new UploadLeases(database.db);
      const key = targetOf(1).key;
      const gone = `${hostname()}/${process.pid}/000000000000/lease`;
      await leases.take(key, gone, 60_000);
      const won = await Promise.all([
        leases.takeOver(key, gone, "x", 60_000),
        leases.takeOver(key, gone, "y", 60_000),
      ]);
      expect(won.filter(Boolean)).toHaveLength(1);
      expect(await leases.take(key, "z", 60_000)).toBe(won[0] ? "x" : "y");
    });
  });
}
