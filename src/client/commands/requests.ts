import type { RequestLink } from "@handoff/sdk";
import { confirmed } from "../confirm.js";
import { accountClient, agentClient } from "../environment.js";
import { expiresInOption, integerOption, required, sizeOption } from "../options.js";
import { printJson } from "../output.js";
import { printList } from "../table.js";
import { terminalSafe } from "../terminal-text.js";

/**
 * `handoff request create --identity FILE --title T [--message M] [--max-files N] [--max-size SIZE]
 * [--expires-in D] [--uses N] [--ask-name] [--ask-email] [--json]`: a request link to the agent of
 * FILE (decisions 10.1). Prints the link's page, the one time its token is shown; --json prints the
 * whole answer (its id, to revoke it, included).
 */
export interface RequestCreateOptions {
  identity?: string;
  title?: string;
  message?: string;
  maxFiles?: string;
  maxSize?: string;
  expiresIn?: string;
  uses?: string;
  askName?: boolean;
  askEmail?: boolean;
  json?: boolean;
}

export async function requestCreate(values: RequestCreateOptions): Promise<number> {
  const identity = required(values.identity, "--identity FILE");
  const title = required(values.title, "--title T");
  const options = {
    title,
    message: values.message,
    maxFiles: integerOption(values.maxFiles, "--max-files", 1, 1000),
    maxTotalSize: sizeOption(values.maxSize, "--max-size"),
    expiresIn: expiresInOption(values.expiresIn),
    maxUses: integerOption(values.uses, "--uses", 1, 1000),
    askSenderName: values.askName,
    askSenderEmail: values.askEmail,
  };
  const link = await (await agentClient(identity, "cli")).createRequest(options);
  if (values.json) printJson(link);
  else process.stdout.write(`${terminalSafe(link.url)}\n`);
  return 0;
}

/** `handoff request list [--json]`: the account's links, newest first (never their tokens). */
export async function requestList(values: { json?: boolean }): Promise<number> {
  const requests = await accountClient("cli").listRequests();
  printList<RequestLink>(
    values.json,
    { requests },
    requests,
    [
      { heading: "ID", value: (r) => r.id },
      { heading: "AGENT", value: (r) => r.agent },
      { heading: "STATUS", value: (r) => r.status },
      { heading: "USES", value: (r) => `${r.uses}/${r.max_uses}` },
      { heading: "EXPIRES", value: (r) => r.expires_at },
      { heading: "TITLE", value: (r) => r.title },
    ],
    "No request links: handoff request create --identity FILE --title T makes one.",
  );
  return 0;
}

/** `handoff request revoke ID [--yes]`: the link answers 410 from now on. */
export async function requestRevoke(values: { yes?: boolean }, [id]: string[]): Promise<number> {
  if (!(await confirmed(`Revoke request link ${id}`, values.yes))) return 1;
  printJson(await accountClient("cli").revokeRequest(id ?? ""));
  return 0;
}
