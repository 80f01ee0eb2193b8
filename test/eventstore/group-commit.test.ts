import { describe, expect, it } from "vitest";
import { GroupCommit } from "../../src/eventstore/group-commit.js";
import {
  type AppendResult,
  type StreamAppend,
  WrongExpectedVersionError,
} from "../../src/eventstore/port.js";

const append = (streamId: string, expected = 0): StreamAppend[] => [{ streamId, expected, events: [] }];

/** A writer that records what each statement held and can refuse chosen streams. */
function writer(refuse: (streams: string[]) => Error | null = () => null) {
  const statements: string[][] = [];
  let release: () => void = () => {};
  const first = new Promise<void>((resolve) => (release = resolve));
  const write = async (appends: StreamAppend[]): Promise<AppendResult[]> => {
    const streams = appends.map((a) => a.streamId);
    statements.push(streams);
    if (statements.length === 1) await first;
    const refusal = refuse(streams);
    if (refusal) throw refusal;
    return streams.map((streamId, i) => ({ revision: i, position: streamId }));
  };
  return { statements, release: () => release(), group: new GroupCommit(write) };
}

describe("group commit", () => {
  it("appends asked for while one is written go together in the next statement, each with its own results", async () => {
    const { statements, release, group } = writer();
    const lone = group.append(append("a"));
    const queued = [group.append(append("b")), group.append([...append("c"), ...append("d")])];
    release();
    expect((await lone).map((r) => r.position)).toEqual(["a"]);
    expect((await Promise.all(queued)).map((rs) => rs.map((r) => r.position))).toEqual([["b"], ["c", "d"]]);
    expect(statements).toEqual([["a"], ["b", "c", "d"]]);
  });

  it("a conflict fails only the request whose stream moved; the others are written without it", async () => {
    const { statements, release, group } = writer((streams) =>
      streams.includes("moved") ? new WrongExpectedVersionError("moved", 0, 3) : null,
    );
    const lone = group.append(append("a"));
    const others = group.append(append("b"));
    const refused = group.append(append("moved"));
    release();
    await lone;
    await expect(refused).rejects.toBeInstanceOf(WrongExpectedVersionError);
    expect((await others).map((r) => r.position)).toEqual(["b"]);
    expect(statements.slice(1)).toEqual([["b", "moved"], ["b"]]);
  });

  it("any other failure is retried request by request, so each gets its own outcome", async () => {
    const { release, group } = writer((streams) =>
      streams.includes("broken") ? new Error("connection lost") : null,
    );
    const lone = group.append(append("a"));
    const fine = group.append(append("b"));
    const broken = group.append(append("broken"));
    release();
    await lone;
    await expect(broken).rejects.toThrow("connection lost");
    expect((await fine).map((r) => r.position)).toEqual(["b"]);
  });
});
