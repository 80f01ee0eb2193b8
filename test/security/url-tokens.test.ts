import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { UrlTokens } from "../../src/security/url-tokens.js";

const tokens = new UrlTokens(randomBytes(32));
const now = new Date("2026-01-01T00:00:00Z");
const claims = { op: "get", key: "transfers/tr_x/f_y", exp: now.getTime() + 60_000 };

describe("UrlTokens.verify parses strictly", () => {
  const token = tokens.sign(claims);

  it("accepts the token it signed, as it is", () => {
    expect(tokens.verify(token, now)).toEqual(claims);
  });

  it.each([
    ["a trailing segment", `${token}.garbage`],
    ["a trailing dot", `${token}.`],
    ["base64 padding", `${token}=`],
    ["a leading dot", `.${token}`],
    ["surrounding space", ` ${token} `],
    ["a newline", `${token}\n`],
    ["a truncated mac", token.slice(0, -1)],
    ["no mac", token.split(".")[0] as string],
  ])("refuses %s", (_what, bad) => {
    expect(tokens.verify(bad, now)).toBeNull();
  });

  it("refuses an expired or forged token", () => {
    expect(tokens.verify(token, new Date(claims.exp))).toBeNull();
    expect(tokens.verify(new UrlTokens(randomBytes(32)).sign(claims), now)).toBeNull();
  });
});
