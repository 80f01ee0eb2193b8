import { formatBytes } from "./format.js";

/** How far back the speed is measured: recent enough to follow a change, long enough to be steady. */
const SPEED_WINDOW_MS = 3000;

/**
 * What a long download or upload says while it runs: bytes done of the total, the speed over
 * the last few seconds, and the time left at that speed ("12 MB of 40 MB · 4.1 MB/s · 7 s left").
 */
export class TransferMeter {
  private readonly samples: { at: number; bytes: number }[] = [];

  constructor(
    readonly total: number,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Records that `bytes` are done so far and answers the line to show. */
  update(bytes: number): string {
    const at = this.now();
    this.samples.push({ at, bytes });
    while (this.samples.length > 2 && at - (this.samples[1]?.at ?? at) >= SPEED_WINDOW_MS)
      this.samples.shift();
    const first = this.samples[0] ?? { at, bytes };
    const elapsed = (at - first.at) / 1000;
    const done = `${formatBytes(bytes)} of ${formatBytes(this.total)}`;
    if (elapsed < 0.2 || bytes <= first.bytes) return done;
    const speed = (bytes - first.bytes) / elapsed;
    const left = Math.max(0, this.total - bytes) / speed;
    return `${done} · ${formatBytes(speed)}/s · ${formatDuration(left)} left`;
  }
}

/** Seconds as a person reads them: "7 s", "3 min 20 s", "1 h 5 min". */
export function formatDuration(seconds: number): string {
  const s = Math.ceil(seconds);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min${s % 60 ? ` ${s % 60} s` : ""}`;
  const minutes = Math.round((s % 3600) / 60);
  return `${Math.floor(s / 3600)} h${minutes ? ` ${minutes} min` : ""}`;
}
