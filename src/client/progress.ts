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

/**
 * One bar per file on stderr, and only when stderr is a terminal (decisions 5.5): scripts that
 * read stdout or capture stderr see no bars. cli-progress draws, throttles and redraws them.
 */
export function progressBars(stream: NodeJS.WriteStream = process.stderr): ProgressBars {
  if (!stream.isTTY) return { onProgress: undefined, stop() {} };
  const bars = new cliProgress.MultiBar(
    {
      stream,
      format: "{file} [{bar}] {percentage}% {value}/{total} MiB",
      formatValue: (value, _options, type) =>
        type === "value" || type === "total" ? (value / MiB).toFixed(1) : String(value),
      hideCursor: true,
      autopadding: true,
    },
    cliProgress.Presets.shades_classic,
  );
  const perFile = new Map<string, cliProgress.SingleBar>();
  return {
    onProgress({ file, bytes, total }) {
      let bar = perFile.get(file);
      if (!bar) {
        bar = bars.create(total, 0, { file: terminalSafe(file) });
        perFile.set(file, bar);
      }
      bar.update(bytes);
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
