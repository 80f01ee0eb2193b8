import { describe, expect, it } from "vitest";
import { unwritten } from "../../src/blobs/byte-streams.js";

/** A writev may write fewer bytes than it was given: the put writes the rest, byte for byte. */
describe("what a short writev leaves to write", () => {
  const buffers = [Buffer.from("abc"), Buffer.from("defg"), Buffer.from("h")];
  const rest = (written: number) => Buffer.concat(unwritten(buffers, written)).toString();

  it("is everything after the bytes written, whether they end inside a buffer or on its edge", () => {
    expect(rest(0)).toBe("abcdefgh");
    expect(rest(2)).toBe("cdefgh");
    expect(rest(3)).toBe("defgh");
    expect(rest(5)).toBe("fgh");
    expect(rest(8)).toBe("");
  });

  it("leaves the caller's buffers as they were", () => {
    unwritten(buffers, 5);
    expect(buffers.map(String)).toEqual(["abc", "defg", "h"]);
  });
});
