import { describe, expect, it } from "vitest";
import { fileNameProblem } from "../../domain/file-names.js";

describe("file names (decisions 7.3)", () => {
  it.each([
    "a.txt",
    "DIR/a/b.txt",
    ".hidden/.env",
    "ünïcödé/ファイル.txt",
    `${"d/".repeat(31)}f`,
    `${"é".repeat(127)}/x`,
  ])("accepts the relative path %j", (name) => {
    expect(fileNameProblem(name)).toBeNull();
  });

  it.each([
    ["", "empty"],
    ["/etc/passwd", "absolute"],
    ["../x", "climbing out"],
    ["a/../../x", "climbing out mid-way"],
    ["a/./b", "a '.' segment"],
    ["a//b", "an empty segment"],
    ["a/", "a trailing slash"],
    ["a\\b", "a backslash"],
    ["a\u0000b", "NUL"],
    ["a\nb", "a line break"],
    ["a\u007fb", "DEL"],
    ["a\u009bb", "a C1 control"],
    [`${"d/".repeat(32)}f`, "33 segments"],
    [`${"x".repeat(256)}`, "a 256-byte segment"],
    [`${"é".repeat(128)}`, "a segment of 128 two-byte characters"],
    [`${`${"x".repeat(200)}/`.repeat(6)}f`, "over 1,024 bytes"],
  ])("refuses %j (%s)", (name) => {
    expect(fileNameProblem(name)).toEqual(expect.any(String));
  });
});
