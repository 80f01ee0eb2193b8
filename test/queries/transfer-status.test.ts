import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EXPIRING_STATUSES, statusAt, type TransferStatus } from "../../domain/transfer.js";
import { whereOverdue, whereStatusAt } from "../../src/queries/transfer-status.js";
import {
  migratedDatabase,
  postgresServer,
  postgresSkipReason,
  type TestDatabase,
  titled,
} from "../support/databases.js";

/** Every status: the ones time ends, and the two it cannot change. */
const STATUSES: TransferStatus[] = [...EXPIRING_STATUSES, "expired", "deleted"];
const NOW = new Date("2026-03-01T12:00:00.000Z");
/** Where `expires_at` sits around `now`: the boundary (at `now` a transfer has expired) and beside it. */
const OFFSETS_MS = [-86_400_000, -1, 0, 1, 86_400_000];

interface Row {
  id: string;
  status: TransferStatus;
  expires_at: Date;
}

/** One transfer row per stored status and expiry around `now`; only `status` and `expires_at` matter. */
const rows: Row[] = STATUSES.flatMap((status) =>
  OFFSETS_MS.map((offset) => ({
    id: `tr_${status}_${offset}`,
    status,
    expires_at: new Date(NOW.getTime() + offset),
  })),
);

const seenAt = (row: Row) => statusAt(row.status, row.expires_at.toISOString(), NOW.toISOString());

/** The check on one database; the embedded one always runs it, so the rule is never left unchecked. */
function agreementSuite(kind: "pglite" | "postgres") {
  return () => {
    let database: TestDatabase;

    beforeAll(async () => {
      database = await migratedDatabase(kind);
      await database.db("transfers").insert(
        rows.map((row) => ({
          ...row,
          mode: "agent-to-agent",
          sender: "a",
          sender_account_id: "00000000-0000-4000-8000-000000000001",
          recipient: "b",
          files: JSON.stringify([]),
          file_count: 0,
          total_size: 0,
          max_downloads: 1,
          downloads: 0,
          auto_delete: false,
          is_encrypted: false,
          metadata: {},
          encryption: {},
          created_at: new Date(NOW.getTime() - 86_400_000 * 2),
          created_position: "0",
          inbox_position: "0",
        })),
      );
    });
    afterAll(() => database.close());

    const selected = async (where: (q: ReturnType<TestDatabase["db"]>) => unknown) => {
      const query = database.db("transfers").select("id").orderBy("id");
      where(query);
      return ((await query) as { id: string }[]).map((row) => row.id);
    };
    const ids = (matching: (row: Row) => boolean) =>
      rows
        .filter(matching)
        .map((row) => row.id)
        .sort();

    const asked: TransferStatus[][] = [
      ...STATUSES.map((status) => [status]),
      ["pending", "active"],
      ["active", "downloaded", "expired"],
      ["expired", "deleted"],
      [...STATUSES],
      [],
    ];
    it.each(asked.map((statuses) => [statuses.join(",") || "nothing", statuses] as const))(
      "selects the transfers whose status at now is %s",
      async (_, statuses) => {
        expect(await selected((q) => whereStatusAt(q, statuses, NOW))).toEqual(
          ids((row) => statuses.includes(seenAt(row))),
        );
      },
    );

    it("selects as overdue the transfers that read as expired but are stored live", async () => {
      const overdue = ids((row) => seenAt(row) === "expired" && row.status !== "expired");
      expect(overdue).toContain("tr_active_0");
      expect(overdue).not.toContain("tr_active_1");
      expect(await selected((q) => whereOverdue(q, NOW))).toEqual(overdue);
    });

    it("names the table's columns, so the clauses work in a join", async () => {
      const query = database.db("transfers as t").select("t.id").orderBy("t.id");
      whereStatusAt(query, ["active"], NOW, "t");
      expect(((await query) as { id: string }[]).map((row) => row.id)).toEqual(
        ids((row) => seenAt(row) === "active"),
      );
    });
  };
}

describe(
  "a transfer's status at a time: the SQL form agrees with statusAt, on PGlite",
  agreementSuite("pglite"),
);
describe.skipIf(!postgresServer)(
  titled(
    "a transfer's status at a time: the SQL form agrees with statusAt, on PostgreSQL",
    postgresSkipReason,
  ),
  agreementSuite("postgres"),
);
