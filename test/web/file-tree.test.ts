import { describe, expect, it } from "vitest";
import { fileTree, savedName } from "../../web/src/file-tree.js";

describe("the web app's file tree (decisions 7.3)", () => {
  it("splits names at '/' into folders, folders first and by name, with what each holds", () => {
    const tree = fileTree([
      { name: "top/b.txt", size: 2 },
      { name: "top/sub/a.txt", size: 3 },
      { name: "loose.txt", size: 5 },
    ]);
    expect(tree).toMatchObject({ count: 3, size: 10, files: [{ index: 2, label: "loose.txt" }] });
    const top = tree.folders[0];
    expect(top).toMatchObject({ name: "top", count: 2, size: 5, files: [{ index: 0, label: "b.txt" }] });
    expect(top?.folders[0]).toMatchObject({ name: "sub", count: 1, files: [{ index: 1, label: "a.txt" }] });
  });

  it("never makes a folder of a name that breaks the rules: it stays one label at the top", () => {
    for (const name of ["../escape.txt", "/etc/passwd", "a//b", "a\\b/c", "a/\u0007/b"]) {
      const tree = fileTree([{ name, size: 1 }]);
      expect(tree.folders, name).toEqual([]);
      expect(tree.files[0]?.label, name).toBe(name);
      expect(() => savedName(name), name).toThrow(/not saved/);
    }
  });

  it("saves a file in folders under its path with '_' for '/'", () => {
    expect(savedName("reports/2024/q1.csv")).toBe("reports_2024_q1.csv");
    expect(savedName("plain.txt")).toBe("plain.txt");
  });
});
