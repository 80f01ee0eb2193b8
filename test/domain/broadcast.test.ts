import { describe, it } from "vitest";
import {
  type BroadcastCommand,
  type BroadcastEvent,
  type BroadcastMessage,
  broadcastDecider,
} from "../../domain/broadcast.js";
import { given } from "./given.js";

const PUBLISHED_AT = "2026-03-01T00:00:00.000Z";
const READ_AT = "2026-03-01T01:00:00.000Z";
const LATER = "2026-03-02T00:00:00.000Z";

const message: BroadcastMessage = {
  title: "Maintenance tonight",
  content: "Uploads pause **22:00–22:30 UTC**.",
  severity: "action_required",
  affectedComponents: ["uploads", "api"],
};

function publish(agentIds: string[]): BroadcastCommand {
  return { type: "PublishBroadcast", broadcastId: "b-1", ...message, agentIds, now: PUBLISHED_AT };
}

function published(agentIds: string[]): BroadcastEvent {
  return {
    type: "BroadcastPublished",
    data: { broadcastId: "b-1", ...message, agentIds, publishedAt: PUBLISHED_AT },
  };
}

const read = (agentId: string, now = READ_AT): BroadcastCommand => ({
  type: "MarkBroadcastRead",
  agentId,
  now,
});
const wasRead = (agentId: string, readAt = READ_AT): BroadcastEvent => ({
  type: "BroadcastRead",
  data: { agentId, readAt },
});

describe("broadcast decider", () => {
  describe("PublishBroadcast", () => {
    it("publishes the message to the agents resolved by the caller, at the command's time", () => {
      given(broadcastDecider, [])
        .when(publish(["a-1", "a-2"]))
        .then([published(["a-1", "a-2"])]);
    });

    it("delivers once to an agent named twice, keeping the order given", () => {
      given(broadcastDecider, [])
        .when(publish(["a-2", "a-1", "a-2"]))
        .then([published(["a-2", "a-1"])]);
    });

    it("publishes to no agent at all when there is none to deliver to", () => {
      given(broadcastDecider, [])
        .when(publish([]))
        .then([published([])]);
    });

    it("refuses to publish the same broadcast twice", () => {
      given(broadcastDecider, [published(["a-1"])])
        .when(publish(["a-1"]))
        .thenRefused("CONFLICT");
    });
  });

  describe("MarkBroadcastRead", () => {
    it("burns the broadcast for the agent that reads it", () => {
      given(broadcastDecider, [published(["a-1", "a-2"])])
        .when(read("a-1"))
        .then([wasRead("a-1")]);
    });

    it("records nothing when the agent reads it again: burned for good", () => {
      given(broadcastDecider, [published(["a-1", "a-2"]), wasRead("a-1")])
        .when(read("a-1", LATER))
        .then([]);
    });

    it("burns it per agent: another recipient can still read it after the first did", () => {
      given(broadcastDecider, [published(["a-1", "a-2"]), wasRead("a-1")])
        .when(read("a-2", LATER))
        .then([wasRead("a-2", LATER)]);
    });

    it("refuses an agent it was not delivered to, as not found", () => {
      given(broadcastDecider, [published(["a-1"])])
        .when(read("a-3"))
        .thenRefused("NOT_FOUND");
    });

    it("refuses an agent it was not delivered to even after others read it", () => {
      given(broadcastDecider, [published(["a-1"]), wasRead("a-1")])
        .when(read("a-3"))
        .thenRefused("NOT_FOUND");
    });

    it("refuses a broadcast that was never published, as not found", () => {
      given(broadcastDecider, []).when(read("a-1")).thenRefused("NOT_FOUND");
    });

    it("refuses every agent of a broadcast delivered to nobody", () => {
      given(broadcastDecider, [published([])])
        .when(read("a-1"))
        .thenRefused("NOT_FOUND");
    });
  });
});
