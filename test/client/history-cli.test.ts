import { rmSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PGliteThread } from "../../src/db/pglite-thread.js";
import { downloadOk, newParties, sendTransfer } from "../http/transfer-helpers.js";
import { handoff, type ListeningServer, startListeningServer } from "./support.js";

type Rows = { rows: unknown[] };

interface Entry {
  position: string;
  type: string;
  data: Record<string, unknown>;
}

/** Decisions 6.6: `handoff history`, `handoff audit`, `handoff report` and `handoff replay`. */
describe("the history commands", () => {
  let server: ListeningServer;
  let env: Record<string, string>;
  let parties: Awaited<ReturnType<typeof newParties>>;
  let transferId: string;

  beforeAll(async () => {
    server = await startListeningServer();
    parties = await newParties(server);
    env = { HANDOFF_URL: server.baseUrl, HANDOFF_API_KEY: parties.apiKey };
    const transfer = await sendTransfer(server, parties.apiKey);
    await downloadOk(server, parties.apiKey, transfer.id, "bob");
    transferId = transfer.id;
  });
  let stopped = false;
  afterAll(async () => {
    if (!stopped) await server?.close();
  });

  it("history transfer|agent ID prints the entries the API gives, in log order", async () => {
    const run = await handoff(["history", "transfer", transferId], env);
    expect(run.status, run.stderr).toBe(0);
    const { entries } = JSON.parse(run.stdout) as { entries: Entry[] };
    expect(entries.map((e) => e.type)).toEqual(["TransferCreated", "DownloadRecorded"]);
    const api = await server.call("GET", `/v1/transfers/${transferId}/history`, { key: parties.apiKey });
    expect(entries).toEqual(api.json().entries);

    const agent = await handoff(["history", "agent", parties.bob.id], env);
    expect(agent.status, agent.stderr).toBe(0);
    expect(JSON.parse(agent.stdout).entries.map((e: Entry) => e.type)).toContain("DownloadRecorded");

    const unknown = await handoff(["history", "transfer", "tr_nope"], env);
    expect(unknown.status).toBe(1);
    expect(unknown.stderr).toContain("(NOT_FOUND)");
    const bad = await handoff(["history", "account", "x"], env);
    expect(bad.status).toBe(1);
    expect(bad.stderr).toContain("history transfer|agent ID");
  });

  it("audit follows every page within --from/--to; report prints JSON or CSV", async () => {
    const all = await handoff(["audit"], env);
    expect(all.status, all.stderr).toBe(0);
    const entries = (JSON.parse(all.stdout) as { entries: Entry[] }).entries;
    const api = await server.call("GET", "/v1/audit?limit=1000", { key: parties.apiKey });
    expect(entries).toEqual(api.json().entries);

    const future = await handoff(["audit", "--from", "2999-01-01T00:00:00Z"], env);
    expect(JSON.parse(future.stdout).entries).toEqual([]);
    const typed = await handoff(["audit", "--type", "DownloadRecorded", "--type", "TransferCreated"], env);
    expect(JSON.parse(typed.stdout).entries.map((e: Entry) => e.type)).toEqual([
      "TransferCreated",
      "DownloadRecorded",
    ]);
    const badTime = await handoff(["audit", "--from", "yesterday"], env);
    expect(badTime.status).toBe(1);
    expect(badTime.stderr).toContain("--from");

    const month = new Date().toISOString().slice(0, 7);
    const report = await handoff(["report", "--month", month], env);
    expect(report.status, report.stderr).toBe(0);
    expect(JSON.parse(report.stdout).transfers).toMatchObject({ downloads: 1 });
    const csv = await handoff(["report", "--month", month, "--csv"], env);
    expect(csv.stdout.split("\n")[0]).toBe("metric,value");
    expect(csv.stdout).toContain("transfers.downloads,1");
  });

  it("replay --until POSITION builds the read models as they were there into a scratch data directory", async () => {
    const entries = (
      await server.call("GET", `/v1/transfers/${transferId}/history`, { key: parties.apiKey })
    ).json().entries as Entry[];
    const created = entries[0]?.position as string;
    const dataDir = server.service.config.dataDir;
    // PGlite is single-process: the server lets go of DATA_DIR first.
    stopped = true;
    await server.app.close();
    await server.service.close();
    const run = await handoff(["replay", "--until", created], { DATA_DIR: dataDir });
    expect(run.status, run.stderr).toBe(0);
    const where = JSON.parse(run.stdout) as { until: string; events: number; data_dir: string; look: string };
    expect(where.until).toBe(created);
    expect(where.data_dir.startsWith(dataDir)).toBe(true);
    expect(where.look).toContain(where.data_dir);

    // There: the transfer exists, not yet downloaded; the live read models say otherwise.
    const scratch = new PGliteThread(`${where.data_dir}/pg`);
    await scratch.waitReady;
    const rows = (await scratch.query("select downloads from transfers where id = $1", [transferId])) as Rows;
    expect(rows.rows).toEqual([{ downloads: 0 }]);
    const later = (await scratch.query("select count(*)::int as n from history_entries where position > $1", [
      created,
    ])) as Rows;
    expect(later.rows).toEqual([{ n: 0 }]);
    await scratch.close();

    const bad = await handoff(["replay"], { DATA_DIR: dataDir });
    expect(bad.status).toBe(1);
    expect(bad.stderr).toContain("--until POSITION");
    rmSync(dataDir, { recursive: true, force: true });
  });
});
