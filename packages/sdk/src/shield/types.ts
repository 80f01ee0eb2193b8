/** What a file is: by its first bytes, by its name and by its declared media type, all from the rules file. */
import { type KnownType, rules } from "./rules.js";

function matchesAt(head: Uint8Array, offset: number, bytes: Uint8Array): boolean {
  if (head.length < offset + bytes.length) return false;
  for (let i = 0; i < bytes.length; i++) if (head[offset + i] !== bytes[i]) return false;
  return true;
}

/** Every known type whose magic number the first bytes carry (a ZIP header fits ZIP, OOXML, EPUB...). */
export function typesByMagic(head: Uint8Array): KnownType[] {
  return rules.types.filter((t) =>
    t.magic.some((alternative) => alternative.every((part) => matchesAt(head, part.offset, part.bytes))),
  );
}

/** The name's last extension, lower case with its dot ("" when the name has none). */
export function extensionOf(name: string): string {
  const base = name.slice(name.lastIndexOf("/") + 1);
  const dot = base.lastIndexOf(".");
  return dot <= 0 ? "" : base.slice(dot).toLowerCase();
}

/** The media type without parameters, lower case ("" when absent). */
export function essenceOf(mediaType: string | null): string {
  return (mediaType ?? "").split(";")[0]?.trim().toLowerCase() ?? "";
}

export function typeByExtension(extension: string): KnownType | undefined {
  return extension === "" ? undefined : rules.types.find((t) => t.extensions.includes(extension));
}

export function typeByMediaType(essence: string): KnownType | undefined {
  return essence === "" ? undefined : rules.types.find((t) => t.mediaTypes.includes(essence));
}

/** Media type patterns allow one `*` ("text/*", "application/*+json"). */
function mediaTypeMatches(pattern: string, essence: string): boolean {
  const star = pattern.indexOf("*");
  if (star < 0) return pattern === essence;
  const prefix = pattern.slice(0, star);
  const suffix = pattern.slice(star + 1);
  return essence.length > pattern.length - 1 && essence.startsWith(prefix) && essence.endsWith(suffix);
}

export function declaredAsText(essence: string): boolean {
  return essence !== "" && rules.textMediaTypes.some((p) => mediaTypeMatches(p, essence));
}

/**
 * Text by content: the first bytes are valid UTF-8 and hold no NUL. When the file goes on past them, a
 * character cut at their edge is allowed.
 */
export function looksLikeText(head: Uint8Array, fileContinues: boolean): boolean {
  if (head.includes(0)) return false;
  try {
    new TextDecoder("utf-8", { fatal: true }).decode(head, { stream: fileContinues });
    return true;
  } catch {
    return false;
  }
}
