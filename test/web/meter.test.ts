import { describe, expect, it } from "vitest";
import { formatDuration, TransferMeter } from "../../web/src/meter.js";

const MB = 1024 * 1024;

describe("the web app's download meter", () => {
  it("says bytes of the total, the recent speed and the time left at that speed", () => {
    let now = 0;
    const meter = new TransferMeter(100 * MB, () => now);
    expect(meter.update(0)).toBe("0 bytes of 100 MB");
    now = 1000;
    expect(meter.update(10 * MB)).toBe("10 MB of 100 MB · 10 MB/s · 9 s left");
    now = 2000;
    expect(meter.update(30 * MB)).toBe("30 MB of 100 MB · 15 MB/s · 5 s left");
  });

  it("follows the last few seconds, not the average since the start", () => {
    let now = 0;
    const meter = new TransferMeter(1000 * MB, () => now);
    for (let second = 0; second <= 10; second++) {
      now = second * 1000;
      // Slow for five seconds (1 MB/s), then fast (50 MB/s).
      meter.update(second <= 5 ? second * MB : 5 * MB + (second - 5) * 50 * MB);
    }
    now = 11_000;
    expect(meter.update(305 * MB)).toBe("305 MB of 1000 MB · 50 MB/s · 14 s left");
  });

  it("says no speed before there is one to measure", () => {
    let now = 0;
    const meter = new TransferMeter(MB, () => now);
    meter.update(0);
    now = 50;
    expect(meter.update(1000)).toBe("1000 bytes of 1.0 MB");
  });

  it("writes durations as a person reads them", () => {
    expect(formatDuration(0.2)).toBe("1 s");
    expect(formatDuration(59)).toBe("59 s");
    expect(formatDuration(60)).toBe("1 min");
    expect(formatDuration(200)).toBe("3 min 20 s");
    expect(formatDuration(3900)).toBe("1 h 5 min");
  });
});
