import { createHmac, hkdfSync, timingSafeEqual } from "node:crypto";

/**
 * The bearer secrets of people (decisions 4.2–4.3) are the server's signatures over ids the log
 * holds: a session token signs its session id, a verification link signs the account and the
 * verification it answers. So the log, the read models and the idempotency records hold no
 * token and no digest of one; only a holder of the server key can make one.
 *
 * Session: `hss_<session uuid, hex>_<43 base64url chars of HMAC>`.
 * Verification: `hvt_<account uuid, hex>_<43 base64url chars of HMAC>`.
 * Password reset: `hrt_<account uuid, hex>_<43 base64url chars of HMAC>`.
 */
export const SESSION_TOKEN_PREFIX = "hss_";
/** The links mailed to people: a verification (decisions 4.2) or a password reset. */
export type PersonLink = "verify" | "reset";
const LINK_PREFIX = { verify: "hvt", reset: "hrt" } as const;
const TOKEN = /^(hss|hvt|hrt)_([0-9a-f]{32})_([A-Za-z0-9_-]{43})$/;

const hex = (uuid: string) => uuid.replaceAll("-", "");
const uuidOf = (h: string) =>
  `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;

export class HumanTokens {
  private readonly key: Buffer;

  constructor(serverKey: Buffer) {
    this.key = Buffer.from(hkdfSync("sha256", serverKey, Buffer.alloc(0), "human-tokens", 32));
  }

  sessionToken(sessionId: string): string {
    return `${SESSION_TOKEN_PREFIX}${hex(sessionId)}_${this.mac(`session:${sessionId}`)}`;
  }

  /** The session id a token names, when its signature holds; whether that session is open is the read model's to say. */
  sessionOf(token: string): string | null {
    const parsed = this.parse(token, "hss");
    if (!parsed) return null;
    const sessionId = uuidOf(parsed.id);
    return this.macMatches(`session:${sessionId}`, parsed.mac) ? sessionId : null;
  }

  /** The token of a link mailed to a person: it signs the account and its open verification or reset. */
  linkToken(kind: PersonLink, accountId: string, id: string): string {
    return `${LINK_PREFIX[kind]}_${hex(accountId)}_${this.mac(`${kind}:${accountId}:${id}`)}`;
  }

  /** The account a link names; its signature is checked against that account's open one by linkMatches. */
  accountOfLink(kind: PersonLink, token: string): string | null {
    const parsed = this.parse(token, LINK_PREFIX[kind]);
    return parsed ? uuidOf(parsed.id) : null;
  }

  linkMatches(kind: PersonLink, token: string, accountId: string, id: string): boolean {
    const parsed = this.parse(token, LINK_PREFIX[kind]);
    return parsed !== null && this.macMatches(`${kind}:${accountId}:${id}`, parsed.mac);
  }

  private parse(token: string, prefix: "hss" | "hvt" | "hrt"): { id: string; mac: string } | null {
    const [, kind, id, mac] = TOKEN.exec(token) ?? [];
    return kind === prefix && id && mac ? { id, mac } : null;
  }

  private mac(message: string): string {
    return createHmac("sha256", this.key).update(message).digest("base64url");
  }

  private macMatches(message: string, mac: string): boolean {
    const expected = Buffer.from(this.mac(message));
    const given = Buffer.from(mac);
    return expected.length === given.length && timingSafeEqual(expected, given);
  }
}
