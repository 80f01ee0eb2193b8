import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { DomainError, fold } from "../../domain/decider.js";
import {
  releasesStorage,
  type TransferCommand,
  type TransferEvent,
  type TransferFile,
  type TransferState,
  transferDecider,
} from "../../domain/transfer.js";
import { live, planContext } from "./given.js";

const NUM_RUNS = 1000;
const SENDER = { accountId: "acc-s", agentId: null };
const T0 = Date.parse("2026-03-01T00:00:00.000Z");
const iso = (ms: number) => new Date(ms).toISOString();

// ---- what is generated -------------------------------------------------------------------------

type Fault = "none" | "missing" | "absent" | "bigger" | "smaller";

type Step =
  | { kind: "download"; agent: string | null }
  | { kind: "expire" }
  | { kind: "delete" }
  | { kind: "confirm"; fault: Fault; index: number }
  | { kind: "purge" };

/** How far the clock moves before a step: a number of ms, or straight to the expiry (if not past it). */
type Advance = number | "toExpiry";

interface Scenario {
  maxDownloads: number;
  autoDelete: boolean;
  presigned: boolean;
  ttlMs: number;
  sizes: number[];
  steps: { advance: Advance; step: Step }[];
}

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 60,
    arbitrary: fc.record({
      kind: fc.constant("download" as const),
      agent: fc.option(fc.constant("agent-r")),
    }),
  },
  { weight: 6, arbitrary: fc.record({ kind: fc.constant("expire" as const) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("delete" as const) }) },
  {
    weight: 10,
    arbitrary: fc.record({
      kind: fc.constant("confirm" as const),
      fault: fc.constantFrom<Fault>("none", "none", "none", "none", "missing", "absent", "bigger", "smaller"),
      index: fc.nat(),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("purge" as const) }) },
);

const advanceArb: fc.Arbitrary<Advance> = fc.oneof(
  { weight: 5, arbitrary: fc.constant(0) },
  { weight: 30, arbitrary: fc.integer({ min: 1, max: 1_000 }) },
  { weight: 1, arbitrary: fc.constant("toExpiry" as const) },
);

const scenarioArb: fc.Arbitrary<Scenario> = fc.record({
  maxDownloads: fc.integer({ min: 1, max: 20 }),
  autoDelete: fc.boolean(),
  presigned: fc.boolean(),
  ttlMs: fc.integer({ min: 1, max: 30_000 }),
  sizes: fc.array(fc.integer({ min: 0, max: 10_000 }), { minLength: 1, maxLength: 3 }),
  steps: fc.array(fc.record({ advance: advanceArb, step: stepArb }), { maxLength: 60, size: "max" }),
});

// ---- running a scenario ------------------------------------------------------------------------

interface Decided {
  command: TransferCommand;
  before: TransferState;
  /** The events recorded, or the refusal. */
  decision: TransferEvent[] | DomainError;
}

interface Run {
  scenario: Scenario;
  expiresAt: number;
  created: TransferEvent;
  files: TransferFile[];
  decided: Decided[];
  /** Every accepted event in order, with the time of the command that recorded it. */
  log: { event: TransferEvent; now: number }[];
  final: TransferState;
}

function uploadReport(files: TransferFile[], fault: Fault, index: number): Record<string, number | null> {
  const report: Record<string, number | null> = Object.fromEntries(files.map((f) => [f.fileId, f.size]));
  const target = files[index % files.length];
  if (!target || fault === "none") return report;
  if (fault === "missing") report[target.fileId] = null;
  if (fault === "absent") delete report[target.fileId];
  if (fault === "bigger") report[target.fileId] = target.size + 1;
  if (fault === "smaller") report[target.fileId] = target.size - 1;
  return report;
}

function commandFor(step: Step, now: string, files: TransferFile[]): TransferCommand {
  switch (step.kind) {
    case "download":
      return {
        type: "RecordDownload",
        by: { accountId: "acc-r", agentId: step.agent },
        linkLifetimeMs: 900_000,
        now,
      };
    case "expire":
      return { type: "ExpireTransfer", now };
    case "delete":
      return { type: "DeleteTransfer", by: SENDER, now };
    case "confirm":
      return {
        type: "ConfirmUpload",
        by: SENDER,
        uploaded: uploadReport(files, step.fault, step.index),
        storedSha256: {},
        now,
      };
    case "purge":
      return { type: "MarkFilesDeleted", now };
  }
}

function run(scenario: Scenario): Run {
  const expiresAt = T0 + scenario.ttlMs;
  const files: TransferFile[] = scenario.sizes.map((size, i) => ({
    fileId: `file-${i}`,
    name: `file-${i}.bin`,
    size,
    type: "application/octet-stream",
    encryptionIv: null,
  }));
  const creation = transferDecider.decide(
    {
      type: "CreateTransfer",
      transferId: "tr-1",
      presigned: scenario.presigned,
      human: null,
      atRest: null,
      parties: {
        mode: "agent-to-agent",
        sender: "sender",
        senderAccountId: "acc-s",
        senderAgentId: "agent-s",
        recipient: "recipient",
        recipientAccountId: "acc-r",
        recipientPersonId: null,
        senderPersonId: null,
        recipientAgentId: "agent-r",
      },
      terms: {
        maxDownloads: scenario.maxDownloads,
        autoDelete: scenario.autoDelete,
        isEncrypted: false,
        message: null,
        metadata: {},
        expiresAt: iso(expiresAt),
      },
      files,
      encryption: {
        encryptedKey: null,
        algorithm: null,
        senderSignature: null,
        recipientKeyVersion: null,
        senderPublicKey: null,
        recipientPublicKey: null,
      },
      now: iso(T0),
    },
    transferDecider.initialState(),
    planContext(),
  );
  if (creation instanceof DomainError || creation.length !== 1 || !creation[0]) {
    throw new Error("creation was refused");
  }
  const created = creation[0];
  let state = fold(transferDecider, creation);
  let clock = T0;
  const decided: Decided[] = [];
  const log: Run["log"] = [{ event: created, now: clock }];
  for (const { advance, step } of scenario.steps) {
    clock = advance === "toExpiry" ? Math.max(clock, expiresAt) : clock + advance;
    const command = commandFor(step, iso(clock), files);
    const decision = transferDecider.decide(command, state, undefined);
    decided.push({ command, before: state, decision });
    if (decision instanceof DomainError) continue;
    for (const event of decision) log.push({ event, now: clock });
    state = decision.reduce(transferDecider.evolve, state);
  }
  return { scenario, expiresAt, created, files, decided, log, final: state };
}

/** A property over the run of every generated scenario. */
function holds(check: (run: Run) => void) {
  fc.assert(
    fc.property(scenarioArb, (scenario) => {
      check(run(scenario));
    }),
    { numRuns: NUM_RUNS },
  );
}

const downloadsIn = (r: Run) =>
  r.log.flatMap(({ event, now }) => (event.type === "DownloadRecorded" ? [{ ...event.data, now }] : []));

// ---- properties --------------------------------------------------------------------------------

describe("transfer decider, over arbitrary command sequences", () => {
  it("never records more downloads than maxDownloads", () => {
    holds((r) => {
      expect(downloadsIn(r).length).toBeLessThanOrEqual(r.scenario.maxDownloads);
      expect(live(r.final).downloads).toBeLessThanOrEqual(r.scenario.maxDownloads);
    });
  });

  it("never records a download at or after expiresAt", () => {
    holds((r) => {
      for (const download of downloadsIn(r)) {
        expect(download.now).toBeLessThan(r.expiresAt);
        expect(Date.parse(download.at)).toBeLessThan(r.expiresAt);
      }
    });
  });

  it("never records a download after TransferDeleted or TransferExpired", () => {
    holds((r) => {
      let ended = false;
      for (const { event } of r.log) {
        if (event.type === "DownloadRecorded") expect(ended).toBe(false);
        if (event.type === "TransferDeleted" || event.type === "TransferExpired") ended = true;
      }
    });
  });

  it("never records a download while pending: a presigned transfer is downloaded only after its activation", () => {
    holds((r) => {
      let live = !r.scenario.presigned;
      for (const { event } of r.log) {
        if (event.type === "DownloadRecorded") expect(live).toBe(true);
        if (event.type === "TransferActivated") live = true;
      }
      for (const { before, decision } of r.decided) {
        if (!(decision instanceof DomainError) && decision.some((e) => e.type === "DownloadRecorded")) {
          expect(before.status).toBe("active");
        }
      }
    });
  });

  it("refuses a download of a pending transfer before expiry as TRANSFER_PENDING, else gone or not found", () => {
    holds((r) => {
      for (const { command, before, decision } of r.decided) {
        if (command.type !== "RecordDownload" || !(decision instanceof DomainError)) continue;
        const early = Date.parse(command.now) < r.expiresAt;
        if (before.status === "pending" && early) expect(decision.code).toBe("TRANSFER_PENDING");
        else if (before.status === "deleted") expect(decision.code).toBe("NOT_FOUND");
        else expect(decision.code).toBe("GONE");
      }
    });
  });

  it("numbers downloads 1, 2, 3, … consecutively", () => {
    holds((r) => {
      expect(downloadsIn(r).map((d) => d.downloads)).toEqual(downloadsIn(r).map((_, i) => i + 1));
    });
  });

  it("reaches `downloaded` exactly when the count reaches maxDownloads", () => {
    holds((r) => {
      const max = r.scenario.maxDownloads;
      for (const { before, decision } of r.decided) {
        if (decision instanceof DomainError) continue;
        const after = decision.reduce(transferDecider.evolve, before);
        if (after.status === "downloaded") expect(live(after).downloads).toBe(max);
        if (live(after).downloads === max)
          expect(["downloaded", "expired", "deleted"]).toContain(after.status);
        const last = decision.some((e) => e.type === "DownloadRecorded" && e.data.downloads === max);
        const ended = decision.some((e) => e.type === "TransferDownloaded");
        expect(ended).toBe(last);
      }
      expect(r.log.filter(({ event }) => event.type === "TransferDownloaded").length).toBeLessThanOrEqual(1);
    });
  });

  it("purges with a delay only under auto-delete", () => {
    holds((r) => {
      for (const { event, now } of r.log) {
        if (event.type !== "TransferDownloaded") continue;
        expect(event.data.purgeAfter).toBe(r.scenario.autoDelete ? iso(now + 900_000) : null);
      }
    });
  });

  it("releases the transfer's storage at most once, and exactly once if it ended expired, deleted or downloaded with auto-delete", () => {
    holds((r) => {
      const releases = r.decided.filter(
        ({ before, decision }) => !(decision instanceof DomainError) && releasesStorage(before, decision),
      ).length;
      expect(releases).toBeLessThanOrEqual(1);
      const freed =
        r.final.status === "expired" ||
        r.final.status === "deleted" ||
        (r.final.status === "downloaded" && r.scenario.autoDelete);
      expect(releases).toBe(freed ? 1 : 0);
      expect(live(r.final).holdsStorage).toBe(!freed);
    });
  });

  it("decides every command as a simple reference model of spec 3.1 does", () => {
    holds((r) => {
      const { maxDownloads, presigned } = r.scenario;
      let activated = !presigned;
      let ended: "no" | "downloaded" | "expired" | "deleted" = "no";
      let downloads = 0;
      let purged = false;
      for (const { command, decision } of r.decided) {
        const now = Date.parse(command.now);
        const early = now < r.expiresAt;
        let expected: string | string[] | "skip";
        switch (command.type) {
          case "RecordDownload":
            if (ended === "deleted") expected = "NOT_FOUND";
            else if (!activated && ended === "no" && early) expected = "TRANSFER_PENDING";
            else if (!activated || ended !== "no" || !early) expected = "GONE";
            else if (downloads + 1 < maxDownloads) expected = ["DownloadRecorded"];
            else expected = ["DownloadRecorded", "TransferDownloaded"];
            break;
          case "ConfirmUpload": {
            const complete = r.files.every((f) => command.uploaded[f.fileId] === f.size);
            if (ended === "deleted") expected = "NOT_FOUND";
            // An active transfer past expiry before the expiry job: see the BUG test in transfer.test.ts.
            else if (activated && ended === "no") expected = early ? [] : "skip";
            else if (activated || ended !== "no" || !early) expected = "GONE";
            else if (!complete) expected = "FILES_MISSING";
            else expected = ["TransferActivated"];
            break;
          }
          case "ExpireTransfer":
            if (ended === "deleted") expected = "NOT_FOUND";
            else if (ended === "expired" || early) expected = [];
            else expected = ["TransferExpired"];
            break;
          case "DeleteTransfer":
            expected = ended === "deleted" ? "NOT_FOUND" : ["TransferDeleted"];
            break;
          case "MarkFilesDeleted":
            expected = purged ? [] : ["TransferFilesDeleted"];
            break;
          default:
            throw new Error(`not generated: ${command.type}`);
        }
        const actual = decision instanceof DomainError ? decision.code : decision.map((e) => e.type);
        if (expected !== "skip") expect(actual, `${command.type} at ${command.now}`).toEqual(expected);
        if (decision instanceof DomainError) continue;
        for (const event of decision) {
          if (event.type === "TransferActivated") activated = true;
          if (event.type === "DownloadRecorded") downloads += 1;
          if (event.type === "TransferDownloaded") ended = "downloaded";
          if (event.type === "TransferExpired") ended = "expired";
          if (event.type === "TransferDeleted") ended = "deleted";
          if (event.type === "TransferFilesDeleted") purged = true;
        }
      }
    });
  });

  it("records the purge of the files at most once", () => {
    holds((r) => {
      expect(r.log.filter(({ event }) => event.type === "TransferFilesDeleted").length).toBeLessThanOrEqual(
        1,
      );
    });
  });

  it("generates scenarios that reach every end state (sanity check of the generator)", () => {
    const seen = new Set<string>();
    fc.assert(
      fc.property(scenarioArb, (scenario) => {
        seen.add(run(scenario).final.status);
      }),
      { numRuns: NUM_RUNS },
    );
    expect([...seen].sort()).toEqual(["active", "deleted", "downloaded", "expired", "pending"]);
  });
});
