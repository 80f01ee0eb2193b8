import type { Knex } from "knex";
import type { LeaseRenewal, UploadLeaseTable } from "../blobs/resumable/leases.js";

/**
 * The tus uploads' leases in the service's database (migrations/014_upload_leases.ts), shared by
 * every instance on it; on the embedded store the same table in PGlite. Times are the database's
 * (`clock_timestamp()`), so the instances' clocks need not agree.
 */
export class UploadLeases implements UploadLeaseTable {
  constructor(private readonly db: Knex) {}

  /**
   * One statement takes a free or lapsed lease (the row lock makes two takers race fairly); a
   * refused taker marks the row wanted, which the holder sees at its next renewal.
   */
  async take(key: string, holder: string, ttlMs: number): Promise<string | null> {
    const { rows } = await this.db.raw<{ rows: unknown[] }>(
      `insert into upload_leases (upload_key, holder, lease_until)
         values (?, ?, clock_timestamp() + ? * interval '1 millisecond')
       on conflict (upload_key) do update
         set holder = excluded.holder, lease_until = excluded.lease_until, wanted_at = null
         where upload_leases.lease_until <= clock_timestamp()
       returning holder`,
      [key, holder, ttlMs],
    );
    if (rows.length > 0) return holder;
    const wanted = await this.db.raw<{ rows: { holder: string }[] }>(
      `update upload_leases set wanted_at = coalesce(wanted_at, clock_timestamp())
        where upload_key = ? returning holder`,
      [key],
    );
    return wanted.rows[0]?.holder ?? null;
  }

  /** A compare-and-set on the holder: of two instances taking over one gone holder, one wins. */
  async takeOver(key: string, from: string, holder: string, ttlMs: number): Promise<boolean> {
    const { rows } = await this.db.raw<{ rows: unknown[] }>(
      `update upload_leases
          set holder = ?, lease_until = clock_timestamp() + ? * interval '1 millisecond', wanted_at = null
        where upload_key = ? and holder = ?
        returning holder`,
      [holder, ttlMs, key, from],
    );
    return rows.length > 0;
  }

  async renew(key: string, holder: string, ttlMs: number): Promise<LeaseRenewal> {
    const { rows } = await this.db.raw<{ rows: { wanted_at: Date | null }[] }>(
      `update upload_leases set lease_until = clock_timestamp() + ? * interval '1 millisecond'
        where upload_key = ? and holder = ? returning wanted_at`,
      [ttlMs, key, holder],
    );
    const [row] = rows;
    if (!row) return "lost";
    return row.wanted_at ? "wanted" : "held";
  }

  async release(key: string, holder: string): Promise<void> {
    await this.db("upload_leases").where({ upload_key: key, holder }).delete();
  }

  async alive(): Promise<Set<string>> {
    const { rows } = await this.db.raw<{ rows: { upload_key: string }[] }>(
      "select upload_key from upload_leases where lease_until > clock_timestamp()",
    );
    return new Set(rows.map((row) => row.upload_key));
  }
}
