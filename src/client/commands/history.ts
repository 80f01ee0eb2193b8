import type { HistoryEntry } from "@handoff/sdk";
import { UsageError } from "../../cli-errors.js";
import { accountClient } from "../environment.js";
import { required } from "../options.js";
import { printJson, printText } from "../output.js";

/** Decisions 6.3: the most entries one audit page may hold. */
const AUDIT_PAGE = 1000;

/** `handoff history transfer|agent ID` (decisions 6.6): prints `{entries}` in log order. */
export async function history(_values: unknown, positionals: string[]): Promise<number> {
  const [what, id, ...extra] = positionals;
  if ((what !== "transfer" && what !== "agent") || !id || extra.length > 0) {
    throw new UsageError("usage: handoff history transfer|agent ID");
  }
  const client = accountClient("cli");
  const entries = what === "transfer" ? await client.transferHistory(id) : await client.agentHistory(id);
  printJson({ entries });
  return 0;
}

/** An ISO time for --from/--to, refused here rather than by the server when it is not one. */
function timeOption(text: string | undefined, flag: string): string | undefined {
  if (text === undefined) return undefined;
  if (Number.isNaN(Date.parse(text)))
    throw new UsageError(`${flag} must be an ISO time, e.g. 2026-11-01T00:00:00Z`);
  return new Date(text).toISOString();
}

/**
 * `handoff audit [--from T] [--to T] [--type TYPE]...` (decisions 6.6): the account's whole audit
 * feed in the range, every page followed, printed as `{entries}`.
 */
export async function audit(values: { from?: string; to?: string; type?: string[] }): Promise<number> {
  const client = accountClient("cli");
  const query = {
    from: timeOption(values.from, "--from"),
    to: timeOption(values.to, "--to"),
    types: values.type ?? [],
    limit: AUDIT_PAGE,
  };
  const entries: HistoryEntry[] = [];
  let page = await client.audit(query);
  entries.push(...page.entries);
  while (page.has_more && page.next_cursor) {
    page = await client.audit({ ...query, cursor: page.next_cursor });
    entries.push(...page.entries);
  }
  printJson({ entries });
  return 0;
}

/** `handoff report --month YYYY-MM [--csv]` (decisions 6.4): the compliance report, JSON or CSV. */
export async function report(values: { month?: string; csv?: boolean }): Promise<number> {
  const month = required(values.month, "--month YYYY-MM");
  if (!/^\d{4}-(0[1-9]|1[0-2])$/.test(month)) {
    throw new UsageError(`--month must be a month as YYYY-MM (month 01 to 12), got "${month}"`);
  }
  const client = accountClient("cli");
  if (values.csv) printText(await client.complianceReportCsv(month));
  else printJson(await client.complianceReport(month));
  return 0;
}
