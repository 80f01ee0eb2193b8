import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes, randomUUID } from "node:crypto";
import type { Knex } from "knex";
import { ERASED } from "../../domain/personal-data.js";
import { Batched } from "../db/batched.js";
import { statementsAtOnce } from "../db/database.js";
import { seal, unseal } from "../security/secrets.js";

/** A sealed value in an event: `pii:v1:<person id>:<base64url of nonce ‖ ciphertext ‖ tag>`. */
const TOKEN = /^pii:v1:([0-9a-f-]{36}):([A-Za-z0-9_-]+)$/;
const KEY_PURPOSE = "handoff/v1 personal data key";
const LOOKUP_PURPOSE = "handoff/v1 personal data lookup";

/** The person a sealed value belongs to, or null for a value written in clear (before sealing existed). */
export function personOfSealed(value: string): string | null {
  return TOKEN.exec(value)?.[1] ?? null;
}

/** E-mail addresses are one address whatever their letter case (design: e-mail uniqueness). */
export function normalEmail(email: string): string {
  return email.trim().toLowerCase();
}

/** A person's data key about to be stored, sealed under the server key. */
interface NewKey {
  personId: string;
  lookup: string;
  sealedKey: string;
}

/**
 * Crypto-shredding (decisions 6.5). Personal data (e-mail addresses, people's names) goes into
 * events sealed under a data key of its person; the keys live here, in `personal_data_keys`,
 * outside the log, each sealed under the server key. Erasure deletes a person's row: every sealed
 * value of theirs, in the log and in read models alike, then reads as "[erased]", and the log is
 * never rewritten.
 *
 * A person is found from an e-mail address by `lookup`, an HMAC of the address under a key derived
 * from the server key, so the table holds no address in clear and a stolen copy of it cannot be
 * searched for an address without the server key. The row goes at erasure, lookup included.
 */
export class PersonalData {
  private readonly lookupKey: Buffer;
  private readonly keyInserts: Batched<NewKey, undefined>;

  constructor(
    private readonly db: Knex,
    private readonly serverKey: Buffer,
    /**
     * True when the event log is in this same database. A new key is then committed without
     * waiting for the disk: the event that uses it commits later in the same write-ahead log, and
     * its flush takes the key's row to the disk first, so a crash never keeps a value whose key it
     * lost. (A log elsewhere, KurrentDB, needs each key on the disk before the event.)
     */
    private readonly options: { keysFlushWithLog: boolean },
  ) {
    this.lookupKey = Buffer.from(hkdfSync("sha256", serverKey, Buffer.alloc(0), LOOKUP_PURPOSE, 32));
    this.keyInserts = new Batched((keys) => this.insertKeys(keys), statementsAtOnce(db));
  }

  lookupOf(email: string): string {
    return createHmac("sha256", this.lookupKey).update(normalEmail(email)).digest("hex");
  }

  /** The person behind an address, made (with a fresh data key) the first time it is met. */
  async personFor(email: string): Promise<string> {
    const lookup = this.lookupOf(email);
    const existing = await this.findByLookup(lookup);
    if (existing) return existing;
    await this.insertKey(randomUUID(), lookup, randomBytes(32));
    // Whoever inserted first wins; both callers then use the same person.
    const person = await this.findByLookup(lookup);
    if (!person) throw new Error("a personal data key vanished while it was being made");
    return person;
  }

  /**
   * A person known by no address (someone who answered a request link with a name only, decisions
   * 10.3): a fresh data key whose look-up no address can match, erased with what it sealed.
   * `value` comes back sealed under it, without reading back the key just stored.
   */
  async newPerson(value: string): Promise<{ personId: string; sealed: string }> {
    const personId = randomUUID();
    const key = randomBytes(32);
    await this.insertKey(personId, `none:${personId}`, key);
    return { personId, sealed: sealWith(key, personId, value) };
  }

  /** The person behind an address, or null when there is none (never seen, or erased). */
  async findPerson(email: string): Promise<string | null> {
    return this.findByLookup(this.lookupOf(email));
  }

  /** Seals one value of a person's for an event or a read model. */
  async seal(personId: string, value: string): Promise<string> {
    const key = (await this.keys([personId])).get(personId);
    if (!key) throw new Error(`no data key for person ${personId}: erased`);
    return sealWith(key, personId, value);
  }

  /**
   * Opens values as stored: sealed ones under their person's key (ERASED when that key is gone),
   * clear ones (written before sealing existed) as they are. One look-up for the whole list.
   */
  async reveal(values: readonly string[]): Promise<string[]> {
    const people = [...new Set(values.map(personOfSealed).filter((id): id is string => id !== null))];
    const keys = await this.keys(people);
    return values.map((value) => {
      const match = TOKEN.exec(value);
      if (!match) return value;
      const [, personId = "", sealed = ""] = match;
      const key = keys.get(personId);
      return key ? openWith(key, personId, sealed) : ERASED;
    });
  }

  /** Opens one value (see reveal); null stays null. */
  async revealOne(value: string | null): Promise<string | null> {
    if (value === null) return null;
    const [opened = ERASED] = await this.reveal([value]);
    return opened;
  }

  /**
   * Destroys a person's data key, then has PostgreSQL rewrite the table so that the deleted row's
   * old version is not left behind in its file (a plain DELETE leaves a dead tuple until VACUUM).
   */
  async erase(personId: string): Promise<void> {
    await this.db("personal_data_keys").where({ person_id: personId }).delete();
    await this.db.raw("vacuum full personal_data_keys");
  }

  /** Stores a data key, sealed under the server key; an address already taken keeps its person. */
  private async insertKey(personId: string, lookup: string, key: Buffer): Promise<void> {
    await this.keyInserts.call({ personId, lookup, sealedKey: seal(this.serverKey, KEY_PURPOSE, key) });
  }

  /** New keys in one statement: people met by many requests at once (request links' senders). */
  private async insertKeys(keys: NewKey[]): Promise<undefined[]> {
    // In one statement, so that the setting (local to its transaction) holds at its commit.
    const unflushed = this.options.keysFlushWithLog
      ? "(select set_config('synchronous_commit', 'off', true))"
      : "(select 1)";
    await this.db.raw(
      `with commit_as as ${unflushed}
       insert into personal_data_keys (person_id, lookup, sealed_key, created_at)
         select k.person_id, k.lookup, k.sealed_key, now()
           from commit_as, unnest(?::uuid[], ?::text[], ?::text[]) as k(person_id, lookup, sealed_key)
         on conflict (lookup) do nothing`,
      [keys.map((k) => k.personId), keys.map((k) => k.lookup), keys.map((k) => k.sealedKey)],
    );
    return keys.map(() => undefined);
  }

  private async findByLookup(lookup: string): Promise<string | null> {
    const row = await this.db("personal_data_keys")
      .where({ lookup })
      .first<{ person_id: string } | undefined>();
    return row?.person_id ?? null;
  }

  private async keys(people: string[]): Promise<Map<string, Buffer>> {
    if (people.length === 0) return new Map();
    const rows = await this.db("personal_data_keys")
      .whereIn("person_id", people)
      .select<{ person_id: string; sealed_key: string }[]>("person_id", "sealed_key");
    return new Map(rows.map((row) => [row.person_id, unseal(this.serverKey, KEY_PURPOSE, row.sealed_key)]));
  }
}

/** AES-256-GCM under the person's key, the person id bound in as associated data. */
function sealWith(key: Buffer, personId: string, value: string): string {
  const nonce = randomBytes(12);
  const cipher = createCipheriv("aes-256-gcm", key, nonce);
  cipher.setAAD(Buffer.from(personId));
  const sealed = Buffer.concat([nonce, cipher.update(value, "utf8"), cipher.final(), cipher.getAuthTag()]);
  return `pii:v1:${personId}:${sealed.toString("base64url")}`;
}

function openWith(key: Buffer, personId: string, sealed: string): string {
  const bytes = Buffer.from(sealed, "base64url");
  const decipher = createDecipheriv("aes-256-gcm", key, bytes.subarray(0, 12));
  decipher.setAAD(Buffer.from(personId));
  decipher.setAuthTag(bytes.subarray(bytes.length - 16));
  return Buffer.concat([decipher.update(bytes.subarray(12, bytes.length - 16)), decipher.final()]).toString(
    "utf8",
  );
}
