/** The findings of one file: at most one per kind (the first seen), listed by severity then table order. */
import { type FindingKind, rankOf, rules, type Severity, severityOf } from "./rules.js";

export interface ShieldFinding {
  kind: string;
  severity: Severity;
  /** One sentence. */
  detail: string;
}

export class Findings {
  private readonly byKind = new Map<FindingKind, ShieldFinding>();

  add(kind: FindingKind, detail: string): void {
    if (!this.byKind.has(kind)) this.byKind.set(kind, { kind, severity: severityOf(kind), detail });
  }

  has(kind: FindingKind): boolean {
    return this.byKind.has(kind);
  }

  list(): ShieldFinding[] {
    const order = (f: ShieldFinding) => rules.kinds.indexOf(f.kind as FindingKind);
    return [...this.byKind.values()].sort(
      (a, b) => rankOf(b.severity) - rankOf(a.severity) || order(a) - order(b),
    );
  }
}

/** A quoted excerpt for a detail sentence: whitespace runs as one space, at most 80 characters. */
export function quote(text: string): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return JSON.stringify(flat.length > 80 ? `${flat.slice(0, 79)}…` : flat);
}

/** A size for a sentence: in the largest unit that states it exactly, else to one decimal. */
export function formatBytes(n: number): string {
  const units = ["bytes", "KiB", "MiB", "GiB", "TiB"];
  let unit = 0;
  while (unit < units.length - 1 && n >= 1024 ** (unit + 1)) unit++;
  for (let exact = unit; exact >= 0 && n / 1024 ** exact < 10_000; exact--) {
    if (Number.isInteger(n / 1024 ** exact)) return `${n / 1024 ** exact} ${units[exact]}`;
  }
  return `${(n / 1024 ** unit).toFixed(1)} ${units[unit]}`;
}
