import { createHmac, hkdfSync, timingSafeEqual } from "node:crypto";

/** Exactly `payload.mac`: base64url without padding, a 32-byte HMAC; nothing before, between or after. */
const TOKEN = /^([A-Za-z0-9_-]{1,4096})\.([A-Za-z0-9_-]{43})$/;

/**
 * Signed, expiring capabilities carried in a URL (decisions 3.16): `base64url(claims).base64url(mac)`.
 * Whoever holds one may do exactly what its claims say until it expires; no Authorization header.
 */
export class UrlTokens {
  private readonly key: Buffer;

  constructor(serverKey: Buffer) {
    this.key = Buffer.from(hkdfSync("sha256", serverKey, Buffer.alloc(0), "url-tokens", 32));
  }

  sign<Claims extends { exp: number }>(claims: Claims): string {
    const payload = Buffer.from(JSON.stringify(claims)).toString("base64url");
    return `${payload}.${this.mac(payload)}`;
  }

  /** The claims, or null when the token is forged, malformed or expired at `now`. */
  verify<Claims extends { exp: number }>(token: string, now: Date): Claims | null {
    const [, payload, mac] = TOKEN.exec(token) ?? [];
    if (!payload || !mac) return null;
    const expected = Buffer.from(this.mac(payload));
    const given = Buffer.from(mac);
    if (expected.length !== given.length || !timingSafeEqual(expected, given)) return null;
    try {
      const claims = JSON.parse(Buffer.from(payload, "base64url").toString("utf8")) as Claims;
      return typeof claims.exp === "number" && claims.exp > now.getTime() ? claims : null;
    } catch {
      return null;
    }
  }

  private mac(payload: string): string {
    return createHmac("sha256", this.key).update(payload).digest("base64url");
  }
}
