import { describe, expect, it } from "vitest";
import { speedMeter, speedText, timeLeftText } from "../../src/client/progress.js";

const MiB = 1024 * 1024;

describe("the progress bar's speed and time left (decisions 7.2)", () => {
  it("measures the speed over the last seconds, and again from a resume that goes back", () => {
    let now = 0;
    const speed = speedMeter(() => now);
    expect(speed(0)).toBeNull();
    now = 1000;
    expect(speed(4 * MiB)).toBe(4 * MiB);
    now = 2000;
    expect(speed(12 * MiB)).toBe(6 * MiB);
    // Seconds later the first samples no longer count: the speed follows the recent rate.
    let recent: number | null = null;
    for (let second = 3; second <= 10; second++) {
      now = second * 1000;
      recent = speed(12 * MiB + (second - 2) * MiB);
    }
    expect(recent).toBe(MiB);
    // An upload resumed from the server's offset reads again from there: a fresh measure.
    now = 11_000;
    expect(speed(15 * MiB)).toBeNull();
    now = 11_500;
    expect(speed(16 * MiB)).toBe(2 * MiB);
  });

  it("says the speed in MiB/s and the time left as m:ss or h:mm:ss", () => {
    expect(speedText(null)).toBe("-- MiB/s");
    expect(speedText(12.34 * MiB)).toBe("12.3 MiB/s");
    expect(timeLeftText(100 * MiB, null)).toBe("--:-- left");
    expect(timeLeftText(100 * MiB, 0)).toBe("--:-- left");
    expect(timeLeftText(42 * MiB, MiB)).toBe("0:42 left");
    expect(timeLeftText(3723 * MiB, MiB)).toBe("1:02:03 left");
    expect(timeLeftText(0, MiB)).toBe("0:00 left");
  });
});
