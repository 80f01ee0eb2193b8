import { type Decider, type Decision, refuse, unreachable } from "./decider.js";
import type { PlanLimits } from "./plan-limits.js";

/**
 * A request link (decisions 10): a capability, held by whoever has its token, to send one agent
 * files encrypted to that agent's key. The log keeps the token's SHA-256 digest only, as it keeps
 * an API key's; the token in clear is shown once, at creation.
 */
export type RequestLinkStatus = "active" | "used" | "expired" | "revoked";

/** What the link's owner asks for: its terms as the link holds them. */
export interface RequestLinkTerms {
  title: string;
  message: string | null;
  maxFiles: number;
  /** Bytes, as uploaded (HOE1 adds 24 bytes and 16 a record to each file). */
  maxTotalSize: number;
  maxUses: number;
  askSenderName: boolean;
  askSenderEmail: boolean;
}

export type RequestLinkEvent =
  | {
      type: "RequestLinkCreated";
      data: RequestLinkTerms & {
        requestId: string;
        accountId: string;
        /** The receiving agent's id (never its account's other agents). */
        agentId: string;
        tokenHash: string;
        expiresAt: string;
        createdAt: string;
      };
    }
  /** One use: a transfer sent through the link was confirmed. `uses`: the count after it. */
  | { type: "RequestLinkUsed"; data: { transferId: string; uses: number; at: string } }
  | { type: "RequestLinkRevoked"; data: { revokedAt: string } };

export type RequestLinkCommand =
  | {
      type: "CreateRequestLink";
      requestId: string;
      accountId: string;
      agentId: string;
      tokenHash: string;
      /** `maxTotalSize` null: the plan's default; `expiresInSeconds` null: 7 days within the plan's retention. */
      terms: Omit<RequestLinkTerms, "maxTotalSize"> & { maxTotalSize: number | null };
      expiresInSeconds: number | null;
      now: string;
    }
  /** A transfer sent through the link is confirmed: one use, counted once however often it is confirmed. */
  | { type: "RecordRequestUse"; transferId: string; now: string }
  | { type: "RevokeRequestLink"; accountId: string; now: string };

/** A link that exists: its terms and what has happened to it. */
export interface RequestLink {
  status: "created";
  record: Extract<RequestLinkEvent, { type: "RequestLinkCreated" }>["data"];
  /** The transfers that used it, in order. */
  usedBy: string[];
  revokedAt: string | null;
}

export type RequestLinkState = { status: "none" } | RequestLink;

/** Plan limits a new link is decided against (decisions 10.1). */
export interface RequestLinkContext {
  limits: Pick<PlanLimits, "maxFileSize" | "maxRetentionSeconds">;
}

/** Decisions 10.1: a link lives 7 days unless asked otherwise, within the plan's retention. */
export const DEFAULT_REQUEST_LIFETIME_SECONDS = 7 * 86400;
/**
 * The default total size where the plan sets no maximum file size: large enough for any request a
 * person answers from a browser, and a ceiling the owner can raise by asking for more.
 */
export const UNLIMITED_PLAN_DEFAULT_TOTAL = 10 * 1024 ** 3;

/**
 * A link's status at `now`, the one rule every reader calls (the decider, the presenters): revoked
 * wins, then used up, then expired from `expires_at` on, whether or not anything was recorded then.
 */
export function requestStatusAt(
  link: { revoked: boolean; uses: number; maxUses: number; expiresAt: string },
  now: string,
): RequestLinkStatus {
  if (link.revoked) return "revoked";
  if (link.uses >= link.maxUses) return "used";
  if (Date.parse(now) >= Date.parse(link.expiresAt)) return "expired";
  return "active";
}

function statusOf(link: RequestLink, now: string): RequestLinkStatus {
  const { maxUses, expiresAt } = link.record;
  return requestStatusAt(
    { revoked: link.revokedAt !== null, uses: link.usedBy.length, maxUses, expiresAt },
    now,
  );
}

/** The refusal of a link that takes nothing more (410 REQUEST_CLOSED), saying why. */
function closed(status: Exclude<RequestLinkStatus, "active">) {
  const why = { used: "has been used", expired: "has expired", revoked: "was revoked" }[status];
  return refuse("REQUEST_CLOSED", `this request link ${why}`);
}

/** Files offered through a link, as the sender declares them before any byte. */
export interface RequestOffer {
  files: { name: string; size: number }[];
}

/**
 * Whether a link takes an offer at `now` (decisions 10.2): open, no more files than it asks for
 * (400), no more bytes in all (413). Null when it does; checked before any byte is uploaded.
 */
export function refuseOffer(state: RequestLinkState, offer: RequestOffer, now: string) {
  if (state.status === "none") return refuse("NOT_FOUND", "no such request link");
  const status = statusOf(state, now);
  if (status !== "active") return closed(status);
  const { maxFiles, maxTotalSize } = state.record;
  if (offer.files.length > maxFiles) {
    return refuse("INVALID", `this request link takes at most ${maxFiles} file(s)`, "files");
  }
  const total = offer.files.reduce((sum, file) => sum + file.size, 0);
  if (total > maxTotalSize) {
    return refuse(
      "FILE_TOO_LARGE",
      `these files come to ${total} bytes; this request link takes at most ${maxTotalSize} bytes in all`,
    );
  }
  return null;
}

function decideCreate(
  command: Extract<RequestLinkCommand, { type: "CreateRequestLink" }>,
  { limits }: RequestLinkContext,
): Decision<RequestLinkEvent> {
  const { requestId, accountId, agentId, tokenHash, terms, expiresInSeconds, now } = command;
  const ceiling = limits.maxFileSize;
  if (ceiling !== null && terms.maxTotalSize !== null && terms.maxTotalSize > ceiling) {
    return refuse(
      "INVALID",
      `max_total_size is over the plan's maximum file size of ${ceiling} bytes`,
      "max_total_size",
    );
  }
  const retention = limits.maxRetentionSeconds;
  if (expiresInSeconds !== null && retention !== null && expiresInSeconds > retention) {
    return refuse(
      "INVALID",
      `expires_in is beyond the plan's retention of ${retention / 3600} hours`,
      "expires_in",
    );
  }
  const lifetime =
    expiresInSeconds ??
    Math.min(DEFAULT_REQUEST_LIFETIME_SECONDS, retention ?? DEFAULT_REQUEST_LIFETIME_SECONDS);
  return [
    {
      type: "RequestLinkCreated",
      data: {
        requestId,
        accountId,
        agentId,
        tokenHash,
        ...terms,
        maxTotalSize: terms.maxTotalSize ?? ceiling ?? UNLIMITED_PLAN_DEFAULT_TOTAL,
        expiresAt: new Date(Date.parse(now) + lifetime * 1000).toISOString(),
        createdAt: now,
      },
    },
  ];
}

function decide(
  command: RequestLinkCommand,
  state: RequestLinkState,
  context: RequestLinkContext | undefined,
): Decision<RequestLinkEvent> {
  if (command.type === "CreateRequestLink") {
    if (state.status !== "none") return refuse("CONFLICT", "this request link already exists");
    if (!context) throw new Error("CreateRequestLink is decided against the account's plan: pass its limits");
    return decideCreate(command, context);
  }
  if (state.status === "none") return refuse("NOT_FOUND", "no such request link");
  switch (command.type) {
    case "RecordRequestUse": {
      if (state.usedBy.includes(command.transferId)) return [];
      const status = statusOf(state, command.now);
      if (status !== "active") return closed(status);
      const uses = state.usedBy.length + 1;
      return [{ type: "RequestLinkUsed", data: { transferId: command.transferId, uses, at: command.now } }];
    }
    case "RevokeRequestLink":
      // Another account's link answers like a missing one, so ids cannot be probed.
      if (state.record.accountId !== command.accountId) return refuse("NOT_FOUND", "no such request link");
      if (state.revokedAt !== null) return [];
      return [{ type: "RequestLinkRevoked", data: { revokedAt: command.now } }];
    default:
      return unreachable(command);
  }
}

function evolve(state: RequestLinkState, event: RequestLinkEvent): RequestLinkState {
  if (event.type === "RequestLinkCreated") {
    return { status: "created", record: event.data, usedBy: [], revokedAt: null };
  }
  if (state.status === "none") return state;
  switch (event.type) {
    case "RequestLinkUsed":
      return { ...state, usedBy: [...state.usedBy, event.data.transferId] };
    case "RequestLinkRevoked":
      return { ...state, revokedAt: event.data.revokedAt };
    default:
      return unreachable(event);
  }
}

export const requestLinkDecider: Decider<
  RequestLinkCommand,
  RequestLinkEvent,
  RequestLinkState,
  RequestLinkContext | undefined
> = {
  initialState: () => ({ status: "none" }),
  evolve,
  decide,
};
