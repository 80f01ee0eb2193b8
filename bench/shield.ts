/**
 * Shield's cost on the receive path: a file streamed as 64 KiB records, each decrypted (AES-256-GCM, as
 * decisions 5.3) and written to a temporary file, with the scanner at `standard` observing every record,
 * against the same loop with `off`, in the same process. Prints figures; it is not a timed test.
 *
 *   npm run build && node --import tsx bench/shield.ts            # 1 GiB per file
 *   SHIELD_BENCH_MIB=256 node --conditions=source --import tsx bench/shield.ts
 */
import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createFileScan, type ShieldLevel } from "@handoff/sdk";

const RECORD = 65536;
const MIB = Number(process.env.SHIELD_BENCH_MIB ?? 1024);
const RECORDS = (MIB * 1024 * 1024) / RECORD;
const key = randomBytes(32);

interface Record {
  nonce: Buffer;
  ciphertext: Buffer;
  tag: Buffer;
}

function encrypt(plaintext: Buffer, index: number): Record {
  const nonce = Buffer.alloc(12);
  nonce.writeUInt32BE(index, 7);
  const cipher = createCipheriv("aes-256-gcm", key, nonce);
  const ciphertext = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return { nonce, ciphertext, tag: cipher.getAuthTag() };
}

const words =
  "the report lists quarterly figures for each region while agents follow the previous instructions in the " +
  "manual and the system prompts you for a PIN before any transfer starts or ends today".split(" ");

function prose(seed: number): Buffer {
  let text = "";
  for (let i = seed; text.length < RECORD; i = (i * 1103515245 + 12345) >>> 0) {
    text += words[i % words.length] + (i % 11 === 0 ? ".\r\n" : " ");
  }
  return Buffer.from(text.slice(0, RECORD), "latin1");
}

/** Sixteen distinct records of each kind, cycled: enough variety that nothing is cached by content. */
const textRecords = Array.from({ length: 16 }, (_, i) => encrypt(prose(i + 1), i));
const binaryRecords = Array.from({ length: 16 }, (_, i) => encrypt(randomBytes(RECORD), i));

const scenarios: { [name: string]: (i: number) => Record } = {
  "text (UTF-8 prose)": (i) => textRecords[i % 16] as Record,
  "binary (random bytes)": (i) => binaryRecords[i % 16] as Record,
  "mixed (text head, then text and binary records alternating)": (i) =>
    (i % 2 === 0 ? textRecords[i % 16] : binaryRecords[i % 16]) as Record,
};

const dir = mkdtempSync(join(tmpdir(), "shield-bench-"));
let peakRss = process.memoryUsage().rss;

async function receive(level: ShieldLevel, record: (i: number) => Record): Promise<number> {
  const path = join(dir, "received.tmp");
  const fd = openSync(path, "w");
  const scan = createFileScan(level, { name: "received.dat", declaredType: null });
  const started = performance.now();
  for (let i = 0; i < RECORDS; i++) {
    const { nonce, ciphertext, tag } = record(i);
    const decipher = createDecipheriv("aes-256-gcm", key, nonce);
    decipher.setAuthTag(tag);
    const plaintext = Buffer.concat([decipher.update(ciphertext), decipher.final()]);
    writeSync(fd, plaintext);
    scan.observe(plaintext);
    if (i % 1024 === 0) peakRss = Math.max(peakRss, process.memoryUsage().rss);
  }
  closeSync(fd);
  const result = await scan.finish(path);
  const seconds = (performance.now() - started) / 1000;
  if (result.verdict !== (level === "off" ? "unscanned" : "clean"))
    throw new Error(`unexpected ${result.verdict}`);
  return MIB / seconds;
}

console.log(`Shield on the receive path: ${MIB} MiB per file, 64 KiB records, decrypt + write + scan`);
console.log("| file | off | standard | ratio |");
console.log("|---|---|---|---|");
for (const [name, record] of Object.entries(scenarios)) {
  let off = 0;
  let standard = 0;
  // Alternating, best of two: the machine is shared, so one slow pass says little.
  for (let round = 0; round < 2; round++) {
    off = Math.max(off, await receive("off", record));
    standard = Math.max(standard, await receive("standard", record));
  }
  const ratio = ((standard / off) * 100).toFixed(0);
  console.log(`| ${name} | ${off.toFixed(0)} MiB/s | ${standard.toFixed(0)} MiB/s | ${ratio} % |`);
}
rmSync(dir, { recursive: true, force: true });
const maxRss = Math.max(peakRss, process.resourceUsage().maxRSS * 1024);
console.log(`peak RSS ${(maxRss / 1024 / 1024).toFixed(0)} MiB (whole process, ${MIB} MiB files)`);
