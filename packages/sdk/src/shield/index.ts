/**
 * Shield: scans each received file as its decrypted bytes are written to the temporary file, and once more
 * on the finished temporary file for what needs the whole (a ZIP's central directory), before it is renamed.
 * decisions.md 5.6; every rule comes from rules.json.
 */
import { ArchiveInspector, archiveFormatOf } from "./archive.js";
import { Findings, type ShieldFinding } from "./findings.js";
import { JpegScanner } from "./jpeg.js";
import { PdfTokenScanner } from "./pdf.js";
import { PngScanner } from "./png.js";
import { type KnownType, magicSpan, rankOf, rules, type ShieldLevel, thresholdOf } from "./rules.js";
import { TextScanner } from "./text.js";
import {
  declaredAsText,
  essenceOf,
  extensionOf,
  looksLikeText,
  typeByExtension,
  typeByMediaType,
  typesByMagic,
} from "./types.js";

export type { ShieldFinding } from "./findings.js";
export type { ShieldLevel } from "./rules.js";

export const SHIELD_LEVELS: readonly ShieldLevel[] = Object.freeze([...rules.levels]);
export const DEFAULT_SHIELD_LEVEL: ShieldLevel = rules.defaultLevel;

export interface ShieldResult {
  level: ShieldLevel;
  verdict: "clean" | "flagged" | "blocked" | "unscanned";
  findings: ShieldFinding[];
}

export class ShieldLevelError extends Error {
  override name = "ShieldLevelError";
}

function unknownLevel(text: string): ShieldLevelError {
  return new ShieldLevelError(
    `Unknown Shield level ${JSON.stringify(text)}: use one of ${SHIELD_LEVELS.join(", ")}.`,
  );
}

/** The level named by `text` (case and surrounding blanks ignored); anything else is refused. */
export function parseShieldLevel(text: string): ShieldLevel {
  const level = text.trim().toLowerCase();
  const known = SHIELD_LEVELS.find((l) => l === level);
  if (known === undefined) throw unknownLevel(text);
  return known;
}

/** Blocked when a finding reaches the level's threshold, flagged when all are below it, else clean. */
export function shieldVerdict(
  level: ShieldLevel,
  findings: readonly ShieldFinding[],
): ShieldResult["verdict"] {
  const threshold = thresholdOf(level);
  if (threshold === null) return "unscanned";
  if (findings.some((f) => rankOf(f.severity) >= rankOf(threshold))) return "blocked";
  return findings.length > 0 ? "flagged" : "clean";
}

export interface FileScan {
  /** Every decrypted chunk in order, as it is written to the temporary file; chunks may be of any size. */
  observe(chunk: Uint8Array): void;
  /** After the last chunk; may read the finished temporary file (a ZIP's central directory). */
  finish(tempPath: string): Promise<ShieldResult>;
}

export interface ScannedFile {
  /** The file's name as sent (signed); only its extension matters here. */
  name: string;
  /** The media type the sender declared (not signed: it may raise a finding, never clear one). */
  declaredType: string | null;
}

interface ContentScanner {
  feed(chunk: Uint8Array): void;
  end?(): void;
}

/** Holds the first bytes (magic numbers, the text test), then streams everything to the chosen scanners. */
class StreamingFileScan implements FileScan {
  private readonly findings = new Findings();
  private readonly head: Uint8Array;
  private headLength = 0;
  private scanners: ContentScanner[] | null = null;
  private magicTypes: KnownType[] = [];

  constructor(
    private readonly level: ShieldLevel,
    private readonly file: ScannedFile,
  ) {
    this.head = new Uint8Array(Math.max(rules.limits.text_sniff_bytes, magicSpan));
  }

  observe(chunk: Uint8Array): void {
    if (this.scanners !== null) {
      for (const scanner of this.scanners) scanner.feed(chunk);
      return;
    }
    const take = Math.min(chunk.length, this.head.length - this.headLength);
    this.head.set(chunk.subarray(0, take), this.headLength);
    this.headLength += take;
    if (this.headLength < this.head.length) return;
    this.startScanners(true);
    if (take < chunk.length) this.observe(chunk.subarray(take));
  }

  async finish(tempPath: string): Promise<ShieldResult> {
    if (this.scanners === null) this.startScanners(false);
    for (const scanner of this.scanners ?? []) scanner.end?.();
    this.checkTypes();
    const format = archiveFormatOf(this.head.subarray(0, this.headLength));
    if (format !== null) await new ArchiveInspector(this.findings, tempPath).inspect(tempPath, format);
    const findings = this.findings.list();
    return { level: this.level, verdict: shieldVerdict(this.level, findings), findings };
  }

  /** Decides what the file is from its first bytes, name and declared type, and feeds them the head. */
  private startScanners(fileContinues: boolean): void {
    const head = this.head.subarray(0, this.headLength);
    this.magicTypes = typesByMagic(head);
    const named = this.claims().map((c) => c.type);
    const is = (test: (t: KnownType) => boolean) => this.magicTypes.some(test) || named.some(test);
    const scanners: ContentScanner[] = [];
    const text = declaredAsText(essenceOf(this.file.declaredType)) || looksLikeText(head, fileContinues);
    if (text) {
      const decoded = new TextDecoder().decode(head);
      const markup =
        is((t) => t.markupSniff !== null) || rules.types.some((t) => t.markupSniff?.test(decoded));
      scanners.push(new TextScanner(this.findings, markup));
    }
    if (is((t) => t.pdf)) scanners.push(new PdfTokenScanner(this.findings));
    if (this.magicTypes.some((t) => t.imageMetadata === "png")) scanners.push(new PngScanner(this.findings));
    if (this.magicTypes.some((t) => t.imageMetadata === "jpeg"))
      scanners.push(new JpegScanner(this.findings));
    this.scanners = scanners;
    for (const scanner of scanners) scanner.feed(head);
  }

  /** The known types the name's extension and the declared type name, with what named each. */
  private claims(): { by: string; type: KnownType }[] {
    const extension = extensionOf(this.file.name);
    const essence = essenceOf(this.file.declaredType);
    return [
      { by: `the name (${extension})`, type: typeByExtension(extension) },
      { by: `the declared type (${essence})`, type: typeByMediaType(essence) },
    ].filter((c): c is { by: string; type: KnownType } => c.type !== undefined);
  }

  /** disguised_executable, executable, type_mismatch and script: bytes against name and declared type. */
  private checkTypes(): void {
    const claims = this.claims().filter((c) => c.type.category !== "executable");
    const executable = this.magicTypes.find((t) => t.category === "executable");
    if (executable !== undefined) {
      const disguise = claims[0];
      if (disguise !== undefined) {
        this.findings.add(
          "disguised_executable",
          `The bytes are a native executable (${executable.name}) while ${disguise.by} says ${disguise.type.name}.`,
        );
      } else {
        this.findings.add("executable", `The bytes are a native executable (${executable.name}).`);
      }
    } else if (this.magicTypes.length > 0) {
      const mismatch = claims.find((c) => !this.magicTypes.includes(c.type));
      const actual = this.magicTypes[0];
      if (mismatch !== undefined && actual !== undefined) {
        this.findings.add(
          "type_mismatch",
          `The bytes are ${actual.name} while ${mismatch.by} says ${mismatch.type.name}.`,
        );
      }
    }
    const shebang = Buffer.from(rules.shebang, "latin1");
    const extension = extensionOf(this.file.name);
    if (shebang.every((b, i) => this.head[i] === b) && this.headLength >= shebang.length) {
      this.findings.add("script", `The file starts with ${rules.shebang}, a script for an interpreter.`);
    } else if (rules.scriptExtensions.includes(extension)) {
      this.findings.add("script", `The name's extension ${extension} is that of a script.`);
    }
  }
}

/** A scan that does nothing: `off` reads no byte. */
const unscanned: FileScan = {
  observe() {},
  async finish() {
    return { level: "off", verdict: "unscanned", findings: [] };
  },
};

export function createFileScan(level: ShieldLevel, file: ScannedFile): FileScan {
  if (!SHIELD_LEVELS.includes(level)) throw unknownLevel(String(level));
  if (thresholdOf(level) === null) return unscanned;
  return new StreamingFileScan(level, file);
}
