import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { postgresServer, postgresSkipReason, titled } from "../support/databases.js";
import {
  captured,
  clientAccount,
  eventually,
  handoff,
  type ListeningServer,
  startHandoff,
  startListeningServer,
  tempDir,
} from "./support.js";

const STREAM = "GET /v1/transfers/inbox/events";

/** `handoff listen` against a server that records its requests: what it receives comes through the event stream. */
describe.skipIf(!postgresServer)(
  titled("handoff listen on the inbox event stream", postgresSkipReason),
  () => {
    const work = tempDir("handoff-listen-stream-");
    const requests: string[] = [];
    let server: ListeningServer;
    let env: Record<string, string>;

    beforeAll(async () => {
      server = await startListeningServer({}, { postgres: true, requests });
      ({ env } = await clientAccount(server));
    });
    afterAll(async () => {
      await server?.close();
      work.remove();
    });

    async function identity(prefix: string) {
      const slug = `${prefix}-${randomBytes(3).toString("hex")}`;
      const path = join(work.path, `${slug}.json`);
      const run = await handoff(["identity", "new", "--agent", slug, "--out", path], env);
      if (run.status !== 0) throw new Error(run.stderr);
      return { slug, path };
    }

    it("receives a file sent while it listens, from the stream, and again after the stream drops", async () => {
      const sender = await identity("stream-sender");
      const listener = await identity("stream-listener");
      const out = join(work.path, "out");
      const child = startHandoff(["listen", "--identity", listener.path, "--out", out], env);
      const output = captured(child);
      const until = (ready: () => boolean, what: string) =>
        eventually(ready, what, () => `exit ${child.exitCode}, stderr: ${output.stderr}`);
      const send = async (name: string, bytes: Buffer) => {
        const path = join(work.path, name);
        writeFileSync(path, bytes);
        const run = await handoff(["send", "--identity", sender.path, "--to", listener.slug, path], env);
        if (run.status !== 0) throw new Error(run.stderr);
        return JSON.parse(run.stdout) as { id: string };
      };
      try {
        await until(() => requests.some((line) => line.startsWith(STREAM)), "the stream to open");
        const bytes = randomBytes(40_000);
        const first = await send("streamed.bin", bytes);
        await until(() => output.stdout.includes(first.id), "the streamed transfer received");
        expect(readFileSync(join(out, "streamed.bin")).equals(bytes)).toBe(true);

        // The connection drops: listen opens the stream again after the last event it had.
        const opened = requests.filter((line) => line.startsWith(STREAM)).length;
        server.app.server.closeAllConnections();
        await until(
          () => requests.filter((line) => line.startsWith(STREAM)).length > opened,
          "the stream reopened",
        );
        expect(requests.filter((line) => line.startsWith(STREAM)).at(-1)).toContain("after=");
        const second = await send("after-drop.bin", Buffer.from("second"));
        await until(() => output.stdout.includes(second.id), "the transfer after the drop");

        const lines = output.stdout
          .trim()
          .split("\n")
          .map((line) => JSON.parse(line));
        expect(lines.map((line) => line.transfer_id)).toEqual([first.id, second.id]);
        // Never a long-poll: the stream carried both.
        expect(
          requests.filter((line) => line.includes("/v1/transfers/inbox?") && line.includes("wait=")),
        ).toEqual([]);
      } finally {
        const exited = once(child, "exit");
        child.kill("SIGTERM");
        const [code] = await exited;
        expect(code).toBe(0);
      }
    });
  },
);
