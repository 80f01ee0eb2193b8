import cliProgress from "cli-progress";
import { terminalSafe } from "./terminal-text.js";

export interface FileProgress {
  file: string;
  bytes: number;
  total: number;
}

export interface ProgressBars {
  /** Undefined when there is no terminal to draw on: the SDK then skips progress reporting. */
  onProgress: ((progress: FileProgress) => void) | undefined;
  stop(): void;
}

const MiB = 1024 * 1024;

/** How far back the speed looks: long enough to be steady, short enough to follow a change. */
const SPEED_WINDOW_MS = 5000;

/**
 * A file's speed in bytes per second over the last SPEED_WINDOW_MS of its progress (null before
 * there are two points in time); progress that goes back (an upload resumed from the server's
 * offset) starts the measure again.
 */
export function speedMeter(now: () => number = () => performance.now()): (bytes: number) => number | null {
  const samples: { at: number; bytes: number }[] = [];
  return (bytes) => {
    const at = now();
    if (bytes < (samples.at(-1)?.bytes ?? 0)) samples.length = 0;
    samples.push({ at, bytes });
    while (samples.length > 2 && at - (samples[1] as { at: number }).at >= SPEED_WINDOW_MS) samples.shift();
    const first = samples[0] as { at: number; bytes: number };
    return at > first.at ? ((bytes - first.bytes) * 1000) / (at - first.at) : null;
  };
}

/** `12.3 MiB/s`, or `-- MiB/s` while there is no speed yet. */
export function speedText(bytesPerSecond: number | null): string {
  return bytesPerSecond === null ? "-- MiB/s" : `${(bytesPerSecond / MiB).toFixed(1)} MiB/s`;
}

/** `0:42 left`, `1:02:03 left`; `--:-- left` while the speed is unknown or nothing moves. */
export function timeLeftText(remainingBytes: number, bytesPerSecond: number | null): string {
  if (remainingBytes <= 0) return "0:00 left";
  if (!bytesPerSecond || bytesPerSecond <= 0) return "--:-- left";
  const seconds = Math.ceil(remainingBytes / bytesPerSecond);
  const [hours, minutes, rest] = [Math.floor(seconds / 3600), Math.floor(seconds / 60) % 60, seconds % 60];
  const two = (value: number) => String(value).padStart(2, "0");
  return `${hours > 0 ? `${hours}:${two(minutes)}` : minutes}:${two(rest)} left`;
}

/**
 * One bar per file on stderr, and only when stderr is a terminal (decisions 5.5): scripts that
 * read stdout or capture stderr see no bars. Each shows the bytes, the speed and the time left
 * (decisions 7.2); cli-progress draws, throttles and redraws them.
 */
export function progressBars(stream: NodeJS.WriteStream = process.stderr): ProgressBars {
  if (!stream.isTTY) return { onProgress: undefined, stop() {} };
  const bars = new cliProgress.MultiBar(
    {
      stream,
      format: "{file} [{bar}] {percentage}% {value}/{total} MiB {speed} {left}",
      formatValue: (value, _options, type) =>
        type === "value" || type === "total" ? (value / MiB).toFixed(1) : String(value),
      // Narrower than cli-progress's 40: with the speed and the time left, a line still fits an
      // 80-column terminal (a longer one is cut at its edge).
      barsize: 20,
      hideCursor: true,
      autopadding: true,
    },
    cliProgress.Presets.shades_classic,
  );
  const perFile = new Map<string, { bar: cliProgress.SingleBar; speed: (bytes: number) => number | null }>();
  return {
    onProgress({ file, bytes, total }) {
      let shown = perFile.get(file);
      if (!shown) {
        const bar = bars.create(total, 0, { file: terminalSafe(file), speed: speedText(null), left: "" });
        shown = { bar, speed: speedMeter() };
        perFile.set(file, shown);
      }
      const speed = shown.speed(bytes);
      shown.bar.update(bytes, { speed: speedText(speed), left: timeLeftText(total - bytes, speed) });
    },
    stop: () => bars.stop(),
  };
}

/** Runs `work` with progress bars that are taken down however it ends. */
export async function withProgressBars<T>(work: (bars: ProgressBars) => Promise<T>): Promise<T> {
  const bars = progressBars();
  try {
    return await work(bars);
  } finally {
    bars.stop();
  }
}
