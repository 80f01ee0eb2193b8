/** The per-file result of decisions 5.6, as the SDK's receive answers it. */
export interface ShieldedFile {
  name: string;
  shield: { verdict: string; findings: { kind: string }[] };
}

/** Decisions 5.6: `handoff receive` exits 3 when Shield blocked a file. */
export const EXIT_BLOCKED = 3;

export const blockedFiles = <F extends ShieldedFile>(files: F[]) =>
  files.filter((file) => file.shield.verdict === "blocked");

/** "tr_… : Shield blocked invoice.pdf (disguised_executable)": names each file and why. */
export function blockedLine(transferId: string, files: ShieldedFile[]): string {
  const named = files.map(
    (file) => `${file.name} (${[...new Set(file.shield.findings.map((f) => f.kind))].join(", ")})`,
  );
  return `${transferId}: Shield blocked ${named.join(", ")}; not written`;
}
