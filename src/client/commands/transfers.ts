import { senderLabel, type Transfer, type TransferStatus } from "@handoff/sdk";
import { UsageError } from "../../cli-errors.js";
import { confirmed } from "../confirm.js";
import { accountClient } from "../environment.js";
import { integerOption } from "../options.js";
import { printJson } from "../output.js";
import { humanBytes, printList } from "../table.js";

const DIRECTIONS = ["sent", "received"] as const;
const STATUSES = ["pending", "pending_recipient", "active", "downloaded", "expired"] as const;

export interface TransfersListOptions {
  direction?: string;
  status?: string;
  limit?: string;
  offset?: string;
  json?: boolean;
}

function oneOf<T extends string>(
  text: string | undefined,
  allowed: readonly T[],
  flag: string,
): T | undefined {
  if (text === undefined) return undefined;
  if (!(allowed as readonly string[]).includes(text))
    throw new UsageError(`${flag} must be one of ${allowed.join(", ")}; got ${text}`);
  return text as T;
}

/** `handoff transfers list [--direction sent|received] [--status S] [--limit N] [--offset N] [--json]`. */
export async function transfersList(values: TransfersListOptions): Promise<number> {
  const page = await accountClient("cli").transfers({
    direction: oneOf(values.direction, DIRECTIONS, "--direction"),
    status: oneOf<TransferStatus>(values.status, STATUSES, "--status"),
    limit: integerOption(values.limit, "--limit", 1, 100),
    offset: integerOption(values.offset, "--offset", 0, Number.MAX_SAFE_INTEGER),
  });
  printList<Transfer>(
    values.json,
    page,
    page.transfers,
    [
      { heading: "ID", value: (t) => t.id },
      { heading: "STATUS", value: (t) => t.status },
      { heading: "FROM", value: (t) => senderLabel(t) },
      { heading: "TO", value: (t) => t.recipient },
      { heading: "FILES", value: (t) => t.file_count },
      { heading: "SIZE", value: (t) => humanBytes(t.total_size) },
      { heading: "DOWNLOADS", value: (t) => `${t.downloads}/${t.max_downloads}` },
      { heading: "EXPIRES", value: (t) => t.expires_at },
    ],
    "No transfers.",
  );
  if (!values.json && page.has_more) {
    const next = page.offset + page.transfers.length;
    process.stderr.write(`${page.total - next} more: handoff transfers list --offset ${next}\n`);
  }
  return 0;
}

/** `handoff transfers get ID`: status and metadata, as JSON (never counts a download). */
export async function transfersGet(_values: unknown, [id]: string[]): Promise<number> {
  printJson(await accountClient("cli").transfer(id ?? ""));
  return 0;
}

/** `handoff transfers delete ID [--yes]`: its file data goes at once, its history stays. */
export async function transfersDelete(values: { yes?: boolean }, [id]: string[]): Promise<number> {
  if (!(await confirmed(`Delete transfer ${id} and its files`, values.yes))) return 1;
  printJson(await accountClient("cli").deleteTransfer(id ?? ""));
  return 0;
}
