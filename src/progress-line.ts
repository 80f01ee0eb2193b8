/**
 * A server command's progress over a long log (`handoff log check`, `projections rebuild`,
 * `replay`): one line on stderr that rewrites itself with how far it is, the rate and, when the
 * total is known, the time left. Only on a terminal: piped or logged, a command prints its result
 * alone.
 */
export interface ProgressLine {
  /** `done` of `of` (null: not known) `unit`s so far, with the rate since the line began. */
  update(done: number, of: number | null, note?: string): void;
  /** A line of its own that stays (a phase begun or ended). */
  say(text: string): void;
  /** Ends the rewritten line. */
  end(): void;
}

/** At most this often: a batch every few milliseconds would spend the terminal's time on the line. */
const REDRAW_MS = 200;

export function progressLine(unit: string, out: NodeJS.WriteStream = process.stderr): ProgressLine {
  const started = Date.now();
  let drawn = 0;
  let open = false;
  const end = () => {
    if (open) out.write("\n");
    open = false;
  };
  return {
    update(done, of, note) {
      if (!out.isTTY || Date.now() - drawn < REDRAW_MS) return;
      drawn = Date.now();
      const rate = done / Math.max(0.001, (drawn - started) / 1000);
      const total = of === null ? "" : ` of ${of}`;
      const left = of === null ? "" : `, ${((of - done) / Math.max(1, rate)).toFixed(0)} s left`;
      out.write(
        `\r${done}${total} ${unit}, ${Math.round(rate)} ${unit}/s${left}${note ? ` ${note}` : ""}\x1b[K`,
      );
      open = true;
    },
    say(text) {
      if (!out.isTTY) return;
      end();
      out.write(`${text}\n`);
    },
    end,
  };
}
