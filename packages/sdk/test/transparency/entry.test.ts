import canonicalize from "canonicalize";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { canonicalJson, entryBytes, entryLeafHash, leafHash } from "../../src/transparency/index.js";

describe("log entries as RFC 8785 canonical JSON", () => {
  it("serializes the RFC's own example as the RFC does", () => {
    const input = JSON.parse(
      '{"numbers":[333333333.33333329,1E30,4.50,2e-3,0.000000000000000000000000001],' +
        '"string":"\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/","literals":[null,true,false]}',
    );
    expect(canonicalJson(input)).toBe(
      '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],' +
        '"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}',
    );
  });

  it("agrees with the canonicalize package (by RFC 8785's author) on any JSON value", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        expect(canonicalJson(value)).toBe(canonicalize(value));
      }),
      { numRuns: 2000 },
    );
    expect(() => canonicalJson("\ud800")).toThrow(TypeError);
    expect(() => canonicalJson(Number.NaN)).toThrow(TypeError);
  });

  it("gives one leaf for an entry whatever the order its fields were written in", () => {
    const entry = {
      position: "1.2",
      type: "T",
      stream: "s",
      at: "2026-01-01T00:00:00.000Z",
      data: { b: 1, a: [2] },
    };
    const shuffled = { data: { a: [2], b: 1 }, at: entry.at, stream: "s", type: "T", position: "1.2" };
    expect(new TextDecoder().decode(entryBytes(entry))).toBe(
      '{"at":"2026-01-01T00:00:00.000Z","data":{"a":[2],"b":1},"position":"1.2","stream":"s","type":"T"}',
    );
    expect(entryLeafHash(shuffled)).toEqual(entryLeafHash(entry));
  });

  it("hashes an entry's text as RFC 6962 hashes the leaf's UTF-8 bytes, whatever characters it holds", () => {
    fc.assert(
      fc.property(fc.string({ unit: "grapheme" }), fc.jsonValue(), (text, value) => {
        const entry = { position: "1.1", type: text, stream: "s", at: "t", data: { value } };
        expect(entryLeafHash(entry)).toEqual(leafHash(entryBytes(entry)));
      }),
      { numRuns: 500 },
    );
  });
});
