import { describe, expect, it } from "vitest";
import {
  type AccountCommand,
  type AccountEvent,
  accountDecider,
  claimEmail,
  emailTaken,
  releaseEmail,
} from "../../domain/account.js";
import { DomainError } from "../../domain/decider.js";
import { given, planContext } from "./given.js";

const NOW = "2026-01-01T00:00:00.000Z";

const context = planContext;

const created: AccountEvent = {
  type: "AccountCreated",
  data: {
    accountId: "acc-1",
    email: "pii:v1:sealed-email",
    name: "pii:v1:sealed-name",
    personId: "person-1",
    plan: "free",
    createdAt: NOW,
    kind: "agent",
  },
};

function reserved(agentId: string, slug: string, keyVersion: number): AccountEvent {
  return { type: "AgentSlugReserved", data: { agentId, slug, keyVersion } };
}
function released(agentId: string, slug: string): AccountEvent {
  return { type: "AgentSlugReleased", data: { agentId, slug } };
}
function keyAdded(keyId: string): AccountEvent {
  return { type: "ApiKeyAdded", data: { keyId } };
}
function keyRemoved(keyId: string): AccountEvent {
  return { type: "ApiKeyRemoved", data: { keyId } };
}

describe("account decider", () => {
  describe("CreateAccount", () => {
    const create: AccountCommand = {
      type: "CreateAccount",
      accountId: "acc-1",
      email: "pii:v1:sealed-email",
      name: "pii:v1:sealed-name",
      personId: "person-1",
      plan: "free",
      kind: "agent",
      now: NOW,
    };

    it("creates the account on a new stream, stamped with the command's time", () => {
      given(accountDecider, [], context()).when(create).then([created]);
    });

    it("refuses to create an account that already exists", () => {
      given(accountDecider, [created], context()).when(create).thenRefused("ACCOUNT_EXISTS");
    });
  });

  describe("on a missing account", () => {
    const commands: AccountCommand[] = [
      { type: "ChangePlan", plan: "pro" },
      { type: "ReserveAgentSlug", agentId: "agent-1", slug: "bot" },
      { type: "ReleaseAgentSlug", agentId: "agent-1" },
      { type: "AddApiKey", keyId: "key-1" },
      { type: "RemoveApiKey", keyId: "key-1" },
    ];
    for (const command of commands) {
      it(`refuses ${command.type} as not found`, () => {
        given(accountDecider, [], context()).when(command).thenRefused("NOT_FOUND");
      });
    }
  });

  describe("ChangePlan", () => {
    it("records the new plan together with the previous one", () => {
      given(accountDecider, [created], context())
        .when({ type: "ChangePlan", plan: "pro" })
        .then([{ type: "AccountPlanChanged", data: { plan: "pro", previousPlan: "free" } }]);
    });

    it("records nothing when the plan is already the current one", () => {
      given(accountDecider, [created], context()).when({ type: "ChangePlan", plan: "free" }).then([]);
    });

    it("compares against the latest plan, not the one the account was created with", () => {
      given(
        accountDecider,
        [created, { type: "AccountPlanChanged", data: { plan: "pro", previousPlan: "free" } }],
        context(),
      )
        .when({ type: "ChangePlan", plan: "free" })
        .then([{ type: "AccountPlanChanged", data: { plan: "free", previousPlan: "pro" } }]);
    });
  });

  describe("ReserveAgentSlug", () => {
    it("reserves a new slug with key version 1", () => {
      given(accountDecider, [created], context({ maxAgents: 3 }))
        .when({ type: "ReserveAgentSlug", agentId: "agent-1", slug: "bot" })
        .then([reserved("agent-1", "bot", 1)]);
    });

    it("refuses a slug another agent of the account already holds", () => {
      given(accountDecider, [created, reserved("agent-1", "bot", 1)], context())
        .when({ type: "ReserveAgentSlug", agentId: "agent-2", slug: "bot" })
        .thenRefused("AGENT_ID_TAKEN");
    });

    it("refuses a taken slug even when the agent limit is also reached", () => {
      given(accountDecider, [created, reserved("agent-1", "bot", 1)], context({ maxAgents: 1 }))
        .when({ type: "ReserveAgentSlug", agentId: "agent-2", slug: "bot" })
        .thenRefused("AGENT_ID_TAKEN");
    });

    it("refuses a new slug once the plan's agent limit is reached", () => {
      given(
        accountDecider,
        [created, reserved("agent-1", "a", 1), reserved("agent-2", "b", 1)],
        context({ maxAgents: 2 }),
      )
        .when({ type: "ReserveAgentSlug", agentId: "agent-3", slug: "c" })
        .thenRefused("QUOTA_EXCEEDED");
    });

    it("refuses every slug when the plan allows no agents", () => {
      given(accountDecider, [created], context({ maxAgents: 0 }))
        .when({ type: "ReserveAgentSlug", agentId: "agent-1", slug: "bot" })
        .thenRefused("QUOTA_EXCEEDED");
    });

    it("allows the last slot below the limit", () => {
      given(accountDecider, [created, reserved("agent-1", "a", 1)], context({ maxAgents: 2 }))
        .when({ type: "ReserveAgentSlug", agentId: "agent-2", slug: "b" })
        .then([reserved("agent-2", "b", 1)]);
    });

    it("has no agent limit when the plan's limit is null", () => {
      const many = Array.from({ length: 50 }, (_, i) => reserved(`agent-${i}`, `slug-${i}`, 1));
      given(accountDecider, [created, ...many], context({ maxAgents: null }))
        .when({ type: "ReserveAgentSlug", agentId: "agent-50", slug: "slug-50" })
        .then([reserved("agent-50", "slug-50", 1)]);
    });

    it("counts only active slugs: a released slug frees its slot", () => {
      given(
        accountDecider,
        [created, reserved("agent-1", "a", 1), reserved("agent-2", "b", 1), released("agent-1", "a")],
        context({ maxAgents: 2 }),
      )
        .when({ type: "ReserveAgentSlug", agentId: "agent-3", slug: "c" })
        .then([reserved("agent-3", "c", 1)]);
    });

    it("lets a released slug be reserved again, rotating its key version from 1 to 2", () => {
      given(accountDecider, [created, reserved("agent-1", "bot", 1), released("agent-1", "bot")], context())
        .when({ type: "ReserveAgentSlug", agentId: "agent-2", slug: "bot" })
        .then([reserved("agent-2", "bot", 2)]);
    });

    it("keeps rotating the key version on every re-reservation of the same slug", () => {
      given(
        accountDecider,
        [
          created,
          reserved("agent-1", "bot", 1),
          released("agent-1", "bot"),
          reserved("agent-2", "bot", 2),
          released("agent-2", "bot"),
        ],
        context(),
      )
        .when({ type: "ReserveAgentSlug", agentId: "agent-3", slug: "bot" })
        .then([reserved("agent-3", "bot", 3)]);
    });

    it("tracks key versions per slug: another slug starts at version 1", () => {
      given(accountDecider, [created, reserved("agent-1", "bot", 1), released("agent-1", "bot")], context())
        .when({ type: "ReserveAgentSlug", agentId: "agent-2", slug: "other" })
        .then([reserved("agent-2", "other", 1)]);
    });
  });

  describe("ReleaseAgentSlug", () => {
    it("releases the slug the agent holds", () => {
      given(accountDecider, [created, reserved("agent-1", "a", 1), reserved("agent-2", "b", 1)], context())
        .when({ type: "ReleaseAgentSlug", agentId: "agent-2" })
        .then([released("agent-2", "b")]);
    });

    it("records nothing for an agent that holds no slug", () => {
      given(accountDecider, [created, reserved("agent-1", "a", 1)], context())
        .when({ type: "ReleaseAgentSlug", agentId: "agent-unknown" })
        .then([]);
    });

    it("records nothing for an agent whose slug was already released", () => {
      given(accountDecider, [created, reserved("agent-1", "a", 1), released("agent-1", "a")], context())
        .when({ type: "ReleaseAgentSlug", agentId: "agent-1" })
        .then([]);
    });
  });

  describe("AddApiKey", () => {
    it("adds a key below the plan's key limit", () => {
      given(accountDecider, [created, keyAdded("key-1")], context({ maxApiKeys: 2 }))
        .when({ type: "AddApiKey", keyId: "key-2" })
        .then([keyAdded("key-2")]);
    });

    it("refuses a key once the plan's key limit is reached", () => {
      given(accountDecider, [created, keyAdded("key-1"), keyAdded("key-2")], context({ maxApiKeys: 2 }))
        .when({ type: "AddApiKey", keyId: "key-3" })
        .thenRefused("KEY_LIMIT_REACHED");
    });

    it("adds a key again after a removal frees a slot", () => {
      given(
        accountDecider,
        [created, keyAdded("key-1"), keyAdded("key-2"), keyRemoved("key-1")],
        context({ maxApiKeys: 2 }),
      )
        .when({ type: "AddApiKey", keyId: "key-3" })
        .then([keyAdded("key-3")]);
    });

    it("has no key limit when the plan's limit is null", () => {
      const many = Array.from({ length: 50 }, (_, i) => keyAdded(`key-${i}`));
      given(accountDecider, [created, ...many], context({ maxApiKeys: null }))
        .when({ type: "AddApiKey", keyId: "key-50" })
        .then([keyAdded("key-50")]);
    });
  });

  describe("RemoveApiKey", () => {
    it("removes a key the account holds", () => {
      given(accountDecider, [created, keyAdded("key-1")], context())
        .when({ type: "RemoveApiKey", keyId: "key-1" })
        .then([keyRemoved("key-1")]);
    });

    it("records nothing for a key the account does not hold", () => {
      given(accountDecider, [created, keyAdded("key-1")], context())
        .when({ type: "RemoveApiKey", keyId: "key-unknown" })
        .then([]);
    });

    it("records nothing for a key that was already removed", () => {
      given(accountDecider, [created, keyAdded("key-1"), keyRemoved("key-1")], context())
        .when({ type: "RemoveApiKey", keyId: "key-1" })
        .then([]);
    });
  });
  describe("EraseAccount", () => {
    const erase: AccountCommand = { type: "EraseAccount", erasureId: "erasure-1", now: NOW };
    const erased: AccountEvent = {
      type: "AccountErased",
      data: { accountId: "acc-1", erasureId: "erasure-1", at: NOW },
    };

    it("records the erasure of an existing account", () => {
      given(accountDecider, [created], context()).when(erase).then([erased]);
    });

    it("records nothing when the account is already erased", () => {
      given(accountDecider, [created, erased], context()).when(erase).then([]);
    });

    it("refuses to erase an account that does not exist", () => {
      given(accountDecider, [], context()).when(erase).thenRefused("NOT_FOUND");
    });

    it("refuses every other change on an erased account", () => {
      given(accountDecider, [created, erased], context())
        .when({ type: "AddApiKey", keyId: "key-9" })
        .thenRefused("NOT_FOUND");
      given(accountDecider, [created, erased], context())
        .when({ type: "ChangePlan", plan: "team" })
        .thenRefused("NOT_FOUND");
    });
  });
});

describe("claimEmail", () => {
  it("claims an address nobody holds yet", () => {
    expect(claimEmail([], "acc-1")).toEqual([{ type: "AccountEmailClaimed", data: { accountId: "acc-1" } }]);
  });

  it("refuses an address already claimed, even by the same account", () => {
    const decision = claimEmail([{ type: "AccountEmailClaimed", data: { accountId: "acc-1" } }], "acc-1");
    expect(decision).toBeInstanceOf(DomainError);
    expect((decision as DomainError).code).toBe("ACCOUNT_EXISTS");
  });

  describe("release", () => {
    it("is taken after a claim, free again once released, and claimable anew", () => {
      const claimed = claimEmail([], "acc-1");
      expect(claimed).toEqual([{ type: "AccountEmailClaimed", data: { accountId: "acc-1" } }]);
      if (claimed instanceof DomainError) throw claimed;
      expect(emailTaken(claimed)).toBe(true);
      expect(claimEmail(claimed, "acc-2")).toBeInstanceOf(DomainError);
      const released = releaseEmail(claimed, "acc-1");
      expect(released).toEqual([{ type: "AccountEmailReleased", data: { accountId: "acc-1" } }]);
      expect(emailTaken([...claimed, ...released])).toBe(false);
      expect(claimEmail([...claimed, ...released], "acc-2")).toEqual([
        { type: "AccountEmailClaimed", data: { accountId: "acc-2" } },
      ]);
      expect(releaseEmail(claimed, "acc-other")).toEqual([]);
    });
  });
});
