import type { Knex } from "knex";
import { describe, expect, it } from "vitest";
import { SnapshotStore } from "../../src/command-handlers/snapshots.js";

/** A store whose states are only remembered (stored: false never touches the table). */
function remembering() {
  let heard: number | null = 0;
  const snapshots = new SnapshotStore({} as Knex, () => heard);
  const keep = (revision: number, mark = snapshots.mark()) =>
    snapshots.keep("transfer-1", "t/v1", { revision, state: { revision } }, mark, { stored: false });
  return { snapshots, keep, hear: (count: number | null) => (heard = count) };
}

describe("remembered states: current only while nothing could have changed them unseen", () => {
  it("a kept state is current until this process appends past it, and current again once the new one is kept", async () => {
    const { snapshots, keep } = remembering();
    await keep(0);
    expect(snapshots.current("transfer-1", "t/v1")?.revision).toBe(0);
    snapshots.appended("transfer-1", 1);
    expect(snapshots.current("transfer-1", "t/v1")).toBeNull();
    await keep(1);
    expect(snapshots.current("transfer-1", "t/v1")?.revision).toBe(1);
  });

  it("a state read before one of this process's appends and kept after it is not current", async () => {
    const { snapshots, keep } = remembering();
    const readAt = snapshots.mark();
    snapshots.appended("transfer-1", 1);
    await keep(0, readAt);
    expect(snapshots.current("transfer-1", "t/v1")).toBeNull();
  });

  it("another process's append, an append whose outcome is unknown, or not knowing who appends: nothing is current", async () => {
    const { snapshots, keep, hear } = remembering();
    await keep(0);
    hear(1);
    expect(snapshots.current("transfer-1", "t/v1")).toBeNull();
    await keep(0);
    expect(snapshots.current("transfer-1", "t/v1")?.revision).toBe(0);
    snapshots.blind();
    expect(snapshots.current("transfer-1", "t/v1")).toBeNull();
    hear(null);
    await keep(0);
    expect(snapshots.current("transfer-1", "t/v1")).toBeNull();
  });

  it("another kind of state (an older shape) is never current", async () => {
    const { snapshots, keep } = remembering();
    await keep(0);
    expect(snapshots.current("transfer-1", "t/v2")).toBeNull();
  });
});
