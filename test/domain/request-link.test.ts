import { describe, expect, it } from "vitest";
import { fold } from "../../domain/decider.js";
import {
  DEFAULT_REQUEST_LIFETIME_SECONDS,
  type RequestLinkCommand,
  type RequestLinkEvent,
  refuseOffer,
  requestLinkDecider,
  requestStatusAt,
  UNLIMITED_PLAN_DEFAULT_TOTAL,
} from "../../domain/request-link.js";
import { given } from "./given.js";

const T0 = "2026-01-01T00:00:00.000Z";
const LATER = "2026-01-01T01:00:00.000Z";
const DAY = 86400;
const plan = (maxFileSize: number | null, maxRetentionSeconds: number | null) => ({
  limits: { maxFileSize, maxRetentionSeconds },
});

const terms = {
  title: "Your invoice",
  message: null,
  maxFiles: 2,
  maxTotalSize: null,
  maxUses: 1,
  askSenderName: true,
  askSenderEmail: false,
};
const create: RequestLinkCommand = {
  type: "CreateRequestLink",
  requestId: "req-1",
  accountId: "acc-1",
  agentId: "agent-1",
  tokenHash: "digest",
  terms,
  expiresInSeconds: null,
  now: T0,
};
const created = (maxTotalSize: number, expiresAt: string, maxUses = 1): RequestLinkEvent => ({
  type: "RequestLinkCreated",
  data: {
    requestId: "req-1",
    accountId: "acc-1",
    agentId: "agent-1",
    tokenHash: "digest",
    ...terms,
    maxUses,
    maxTotalSize,
    expiresAt,
    createdAt: T0,
  },
});
const WEEK_LATER = "2026-01-08T00:00:00.000Z";
const link = created(1000, WEEK_LATER);
const used = (transferId: string, uses: number): RequestLinkEvent => ({
  type: "RequestLinkUsed",
  data: { transferId, uses, at: LATER },
});
const revoked: RequestLinkEvent = { type: "RequestLinkRevoked", data: { revokedAt: LATER } };

describe("request link decider", () => {
  describe("CreateRequestLink", () => {
    it("takes the plan's maximum file size as the default total, and 7 days as the default life", () => {
      given(requestLinkDecider, [], plan(1000, null)).when(create).then([link]);
      expect(DEFAULT_REQUEST_LIFETIME_SECONDS).toBe(7 * DAY);
    });

    it("keeps the default life within a shorter retention (the free plan's day)", () => {
      given(requestLinkDecider, [], plan(1000, DAY))
        .when(create)
        .then([created(1000, "2026-01-02T00:00:00.000Z")]);
    });

    it("takes a total size and a life within the plan", () => {
      given(requestLinkDecider, [], plan(1000, DAY))
        .when({ ...create, terms: { ...terms, maxTotalSize: 500 }, expiresInSeconds: 3600 })
        .then([created(500, LATER)]);
    });

    it("has a default total where the plan sets no maximum file size", () => {
      given(requestLinkDecider, [], plan(null, null))
        .when(create)
        .then([created(UNLIMITED_PLAN_DEFAULT_TOTAL, WEEK_LATER)]);
    });

    it("refuses a total size over the plan's maximum file size", () => {
      given(requestLinkDecider, [], plan(1000, null))
        .when({ ...create, terms: { ...terms, maxTotalSize: 1001 } })
        .thenRefused("INVALID");
    });

    it("refuses a life beyond the plan's retention, never cutting it silently", () => {
      given(requestLinkDecider, [], plan(1000, DAY))
        .when({ ...create, expiresInSeconds: 7 * DAY })
        .thenRefused("INVALID");
    });

    it("refuses to create a link that exists", () => {
      given(requestLinkDecider, [link], plan(1000, null)).when(create).thenRefused("CONFLICT");
    });
  });

  describe("RecordRequestUse", () => {
    const use = (transferId: string, now = LATER): RequestLinkCommand => ({
      type: "RecordRequestUse",
      transferId,
      now,
    });

    it("counts one use per confirmed transfer", () => {
      given(requestLinkDecider, [link])
        .when(use("tr_1"))
        .then([used("tr_1", 1)]);
    });

    it("counts a transfer's use once, however often it is confirmed", () => {
      given(requestLinkDecider, [link, used("tr_1", 1)])
        .when(use("tr_1"))
        .then([]);
    });

    it("refuses a second transfer on a one-use link: REQUEST_CLOSED", () => {
      given(requestLinkDecider, [link, used("tr_1", 1)])
        .when(use("tr_2"))
        .thenRefused("REQUEST_CLOSED");
    });

    it("takes as many transfers as max_uses", () => {
      const three = created(1000, WEEK_LATER, 3);
      given(requestLinkDecider, [three, used("tr_1", 1)])
        .when(use("tr_2"))
        .then([used("tr_2", 2)]);
    });

    it("refuses on an expired link, from expires_at on", () => {
      given(requestLinkDecider, [link]).when(use("tr_1", WEEK_LATER)).thenRefused("REQUEST_CLOSED");
    });

    it("refuses on a revoked link", () => {
      given(requestLinkDecider, [link, revoked]).when(use("tr_1")).thenRefused("REQUEST_CLOSED");
    });

    it("refuses on a link that does not exist", () => {
      given(requestLinkDecider, []).when(use("tr_1")).thenRefused("NOT_FOUND");
    });
  });

  describe("RevokeRequestLink", () => {
    const revoke = (accountId: string): RequestLinkCommand => ({
      type: "RevokeRequestLink",
      accountId,
      now: LATER,
    });

    it("revokes the account's own link", () => {
      given(requestLinkDecider, [link]).when(revoke("acc-1")).then([revoked]);
    });

    it("revoking again records nothing", () => {
      given(requestLinkDecider, [link, revoked]).when(revoke("acc-1")).then([]);
    });

    it("another account's link reads as missing", () => {
      given(requestLinkDecider, [link]).when(revoke("acc-2")).thenRefused("NOT_FOUND");
    });
  });
});

describe("requestStatusAt", () => {
  const base = { revoked: false, uses: 0, maxUses: 1, expiresAt: WEEK_LATER };

  it("is active until expires_at, expired from it on", () => {
    expect(requestStatusAt(base, "2026-01-07T23:59:59.999Z")).toBe("active");
    expect(requestStatusAt(base, WEEK_LATER)).toBe("expired");
  });

  it("is used once its uses are spent, revoked above all", () => {
    expect(requestStatusAt({ ...base, uses: 1 }, LATER)).toBe("used");
    expect(requestStatusAt({ ...base, uses: 1, revoked: true }, WEEK_LATER)).toBe("revoked");
  });
});

describe("refuseOffer", () => {
  const state = fold(requestLinkDecider, [link]);
  const file = (size: number) => ({ name: "a.pdf", size });

  it("takes files within the link's count and total", () => {
    expect(refuseOffer(state, { files: [file(600), file(400)] }, LATER)).toBeNull();
  });

  it("refuses more files than the link asks for (400)", () => {
    expect(refuseOffer(state, { files: [file(1), file(1), file(1)] }, LATER)?.code).toBe("INVALID");
  });

  it("refuses more bytes in all than the link takes (413)", () => {
    expect(refuseOffer(state, { files: [file(600), file(401)] }, LATER)?.code).toBe("FILE_TOO_LARGE");
  });

  it("refuses on a used, expired or revoked link, and a missing one", () => {
    expect(
      refuseOffer(fold(requestLinkDecider, [link, used("tr_1", 1)]), { files: [file(1)] }, LATER)?.code,
    ).toBe("REQUEST_CLOSED");
    expect(refuseOffer(state, { files: [file(1)] }, WEEK_LATER)?.code).toBe("REQUEST_CLOSED");
    expect(refuseOffer(fold(requestLinkDecider, [link, revoked]), { files: [file(1)] }, LATER)?.code).toBe(
      "REQUEST_CLOSED",
    );
    expect(refuseOffer(requestLinkDecider.initialState(), { files: [file(1)] }, LATER)?.code).toBe(
      "NOT_FOUND",
    );
  });
});
