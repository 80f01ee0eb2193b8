/**
 * The Shield rules file, compiled once. Every decision Shield takes reads a value from rules.json, so another
 * SDK that loads the same file decides alike; this module only turns the data into lookups and RegExps.
 */
import data from "./rules.json" with { type: "json" };

export type Severity = "critical" | "high" | "medium" | "low";
export type ShieldLevel = "off" | "permissive" | "standard" | "strict" | "paranoid";
export type FindingKind = (typeof data.kinds)[number]["kind"];

interface MagicPart {
  offset: number;
  bytes: Uint8Array;
}

export interface KnownType {
  id: string;
  name: string;
  category: string;
  /** Alternatives; each is a list of byte strings that must all match at their offsets. */
  magic: MagicPart[][];
  extensions: string[];
  mediaTypes: string[];
  archive: "zip" | "gzip" | null;
  pdf: boolean;
  imageMetadata: "png" | "jpeg" | null;
  markupSniff: RegExp | null;
}

export interface HiddenRange {
  from: number;
  to: number;
  label: string;
}

function hexBytes(hex: string): Uint8Array {
  return Uint8Array.from(Buffer.from(hex, "hex"));
}

/** Patterns are ASCII and matched case-insensitively (Python: re.IGNORECASE | re.ASCII). */
function caseless(pattern: string, flags = ""): RegExp {
  return new RegExp(pattern, `i${flags}`);
}

const types: KnownType[] = data.types.map((t) => {
  const extra = t as {
    archive?: "zip" | "gzip";
    pdf?: boolean;
    image_metadata?: "png" | "jpeg";
    markup_sniff?: string;
  };
  return {
    id: t.id,
    name: t.name,
    category: t.category,
    magic: t.magic.map((alternative) =>
      alternative.map((part) => ({ offset: part.offset, bytes: hexBytes(part.hex) })),
    ),
    extensions: t.extensions,
    mediaTypes: t.media_types,
    archive: extra.archive ?? null,
    pdf: extra.pdf ?? false,
    imageMetadata: extra.image_metadata ?? null,
    markupSniff: extra.markup_sniff === undefined ? null : caseless(extra.markup_sniff),
  };
});

const severityRank = new Map<string, number>(data.severities.map((s, i) => [s, i]));

export const rules = {
  levels: Object.keys(data.levels) as ShieldLevel[],
  defaultLevel: data.default_level as ShieldLevel,
  limits: data.limits,
  kinds: data.kinds.map((k) => k.kind as FindingKind),
  types,
  textMediaTypes: data.text.media_types,
  whitespace: data.text.whitespace,
  /** All override patterns as one alternation, so a window of text is searched in a single pass. */
  override: caseless(data.override_patterns.map((p) => `(?:${p})`).join("|")),
  hiddenText: data.hidden_text.map(
    (r): HiddenRange => ({
      from: Number.parseInt(r.from, 16),
      to: Number.parseInt(r.to, 16),
      label: r.label,
    }),
  ),
  shebang: data.script.shebang,
  scriptExtensions: data.script.extensions,
  pdfTokens: data.active_content.pdf_tokens,
  pdfTokenTerminators: new Set(Array.from(data.active_content.pdf_token_terminators, (c) => c.charCodeAt(0))),
  markup: data.active_content.markup_patterns.map((m) => ({ pattern: caseless(m.pattern), label: m.label })),
  ooxmlMarkerEntry: data.active_content.ooxml_marker_entry,
  ooxmlMacroEntry: data.active_content.ooxml_macro_entry,
  pngTextChunks: data.image_metadata.png_text_chunks,
  jpegCommentMarker: Number.parseInt(data.image_metadata.jpeg_comment_marker, 16),
  jpegApp1Marker: Number.parseInt(data.image_metadata.jpeg_app1_marker, 16),
  exifHeader: hexBytes(data.image_metadata.exif_header),
  xmpHeader: hexBytes(data.image_metadata.xmp_header),
  exifIfdPointerTag: Number.parseInt(data.image_metadata.exif_ifd_pointer_tag, 16),
  exifUserCommentTag: Number.parseInt(data.image_metadata.exif_user_comment_tag, 16),
  exifUtf16leTags: data.image_metadata.exif_utf16le_tags.map((t) => Number.parseInt(t, 16)),
};

export function severityOf(kind: FindingKind): Severity {
  const row = data.kinds.find((k) => k.kind === kind);
  if (row === undefined) throw new Error(`Shield rules name no severity for ${kind}`);
  return row.severity as Severity;
}

export function rankOf(severity: Severity): number {
  return severityRank.get(severity) ?? 0;
}

/** The lowest severity a level blocks, or null for `off`. */
export function thresholdOf(level: ShieldLevel): Severity | null {
  return data.levels[level] as Severity | null;
}

/** The longest offset + length any magic number needs; the scanner holds at least this many first bytes. */
export const magicSpan = Math.max(
  ...types.flatMap((t) => t.magic.flatMap((alt) => alt.map((part) => part.offset + part.bytes.length))),
);
