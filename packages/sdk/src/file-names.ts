/**
 * Decisions 7.3 (and 3.22): what a file name of a transfer may be. A name is a relative path:
 * segments joined by `/`, each 1–255 bytes, never `.` or `..`, without `\` or control characters
 * (U+0000–U+001F, U+007F–U+009F), at most 32 segments and 1,024 bytes in all. The server refuses
 * any other name, and every receiver checks again before it writes (a server is not trusted to).
 * Here, in the SDK, so that the server (domain/file-names.ts), the Node receivers and the browser
 * share the one rule.
 */
export const MAX_FILES_PER_TRANSFER = 1000;
export const MAX_SEGMENT_BYTES = 255;
export const MAX_SEGMENTS = 32;
export const MAX_NAME_BYTES = 1024;

/** U+0000–U+001F, U+007F–U+009F or `\`. */
const forbiddenCharacter = (name: string) =>
  [...name].some((character) => {
    const code = character.codePointAt(0) ?? 0;
    return code <= 0x1f || (code >= 0x7f && code <= 0x9f) || character === "\\";
  });

const encoder = new TextEncoder();
const utf8Bytes = (text: string) => encoder.encode(text).length;

/** Why `name` is not a valid file name, in one sentence; null when it is valid. */
export function fileNameProblem(name: string): string | null {
  if (name.length === 0) return "a file name must not be empty";
  if (utf8Bytes(name) > MAX_NAME_BYTES) return `a file name must be at most ${MAX_NAME_BYTES} bytes`;
  if (forbiddenCharacter(name)) return "a file name must not contain control characters or backslashes";
  const segments = name.split("/");
  if (segments.length > MAX_SEGMENTS) return `a file name must have at most ${MAX_SEGMENTS} folder levels`;
  for (const segment of segments) {
    if (segment === "") return "a file name is a relative path: no leading, trailing or doubled '/'";
    if (segment === "." || segment === "..") return "a file name must not contain '.' or '..' segments";
    if (utf8Bytes(segment) > MAX_SEGMENT_BYTES)
      return `each part of a file name must be at most ${MAX_SEGMENT_BYTES} bytes`;
  }
  return null;
}

/** The folders and file of a valid name, in order. */
export const segmentsOf = (name: string): string[] => name.split("/");
