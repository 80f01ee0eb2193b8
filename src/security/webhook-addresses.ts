import { BlockList, isIP } from "node:net";

/**
 * Decisions 8.1 and issue 23 point 2: where a webhook may not go. Loopback, private, link-local
 * (with the cloud metadata address 169.254.169.254), CGNAT, unique-local, multicast and the other
 * special-purpose ranges, unless the service runs with WEBHOOKS_ALLOW_PRIVATE=1.
 */
const FORBIDDEN = new BlockList();
for (const [network, prefix] of [
  ["0.0.0.0", 8], // "this network"
  ["10.0.0.0", 8], // private
  ["100.64.0.0", 10], // CGNAT (also Alibaba's metadata, 100.100.100.200)
  ["127.0.0.0", 8], // loopback
  ["169.254.0.0", 16], // link-local, cloud metadata
  ["172.16.0.0", 12], // private
  ["192.0.0.0", 24], // IETF protocol assignments
  ["192.0.2.0", 24], // documentation
  ["192.168.0.0", 16], // private
  ["198.18.0.0", 15], // benchmarking
  ["198.51.100.0", 24], // documentation
  ["203.0.113.0", 24], // documentation
  ["224.0.0.0", 4], // multicast
  ["240.0.0.0", 4], // reserved, broadcast
] as const)
  FORBIDDEN.addSubnet(network, prefix, "ipv4");
FORBIDDEN.addAddress("168.63.129.16", "ipv4"); // Azure's host endpoint
for (const [network, prefix] of [
  ["::", 128], // unspecified
  ["::1", 128], // loopback
  // Prefixes that carry an IPv4 address (NAT64, 6to4, Teredo) could reach any of the above; an
  // IPv4-mapped ::ffff:a.b.c.d is matched against the IPv4 ranges by BlockList itself.
  ["64:ff9b::", 96],
  ["64:ff9b:1::", 48],
  ["2002::", 16],
  ["2001::", 32],
  ["100::", 64], // discard
  ["2001:db8::", 32], // documentation
  ["fc00::", 7], // unique-local (AWS metadata fd00:ec2::254 too)
  ["fe80::", 10], // link-local
  ["ff00::", 8], // multicast
] as const)
  FORBIDDEN.addSubnet(network, prefix, "ipv6");

/** True for an address no webhook may reach (an IP literal; anything else is not an address). */
export function isForbiddenAddress(address: string): boolean {
  const bare = address.replace(/^\[|\]$/g, "");
  const family = isIP(bare);
  if (family === 4) return FORBIDDEN.check(bare, "ipv4");
  return family === 6 ? FORBIDDEN.check(bare, "ipv6") : true;
}

export interface ResolvedAddress {
  address: string;
  family: number;
}

/** Finds every address of a host name (dns.lookup with `all`, or a test's stand-in). */
export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

export interface WebhookPolicy {
  /** WEBHOOKS_ALLOW_PRIVATE=1: http:// and private addresses allowed (a receiver on this machine). */
  allowPrivate: boolean;
  resolve: Resolver;
}

export class ForbiddenWebhookUrl extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ForbiddenWebhookUrl";
  }
}

/** The URL's host as the connection will use it: brackets of an IPv6 literal removed. */
export const hostOf = (url: URL) => url.hostname.replace(/^\[|\]$/g, "");

/**
 * The checks that need no network: the scheme, an address written in the URL, and names that are
 * this machine by definition. Throws ForbiddenWebhookUrl.
 */
export function checkWebhookUrlShape(raw: string, policy: Pick<WebhookPolicy, "allowPrivate">): URL {
  const url = new URL(raw);
  const schemes = policy.allowPrivate ? ["https:", "http:"] : ["https:"];
  if (!schemes.includes(url.protocol)) throw new ForbiddenWebhookUrl("webhook_url must be an https:// URL");
  if (url.username || url.password) throw new ForbiddenWebhookUrl("webhook_url may not carry credentials");
  if (policy.allowPrivate) return url;
  const host = hostOf(url).toLowerCase();
  if (isIP(host) ? isForbiddenAddress(host) : host === "localhost" || host.endsWith(".localhost"))
    throw new ForbiddenWebhookUrl("webhook_url may not point at a private, loopback or link-local address");
  return url;
}

/** The addresses a delivery may connect to: every one the name resolves to must be allowed. */
export async function allowedAddresses(hostname: string, policy: WebhookPolicy): Promise<ResolvedAddress[]> {
  if (isIP(hostname)) {
    if (!policy.allowPrivate && isForbiddenAddress(hostname))
      throw new ForbiddenWebhookUrl(`${hostname} is a private, loopback or link-local address`);
    return [{ address: hostname, family: isIP(hostname) }];
  }
  const addresses = await policy.resolve(hostname);
  if (addresses.length === 0) throw new ForbiddenWebhookUrl(`${hostname} has no address`);
  const forbidden = policy.allowPrivate ? undefined : addresses.find((a) => isForbiddenAddress(a.address));
  if (forbidden)
    throw new ForbiddenWebhookUrl(
      `${hostname} resolves to ${forbidden.address}, a private, loopback or link-local address`,
    );
  return addresses;
}

/** How long the check when a URL is set waits for DNS; a name not resolving yet is checked at delivery. */
const SET_TIME_RESOLVE_MS = 2000;

/**
 * Decisions 8.1: the check when a URL is set. A name that resolves to a forbidden address is
 * refused; one that does not resolve (yet) is accepted, since every delivery checks again.
 */
export async function checkWebhookUrl(raw: string, policy: WebhookPolicy): Promise<void> {
  const url = checkWebhookUrlShape(raw, policy);
  if (policy.allowPrivate) return;
  const host = hostOf(url);
  let timer: NodeJS.Timeout | undefined;
  const gaveUp = new Promise<null>((resolve) => {
    timer = setTimeout(() => resolve(null), SET_TIME_RESOLVE_MS);
  });
  try {
    await Promise.race([allowedAddresses(host, policy), gaveUp]);
  } catch (error) {
    if (error instanceof ForbiddenWebhookUrl) throw error;
  } finally {
    clearTimeout(timer);
  }
}
