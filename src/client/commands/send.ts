import { resolve } from "node:path";
import { HandoffError } from "@handoff/sdk";
import { UsageError } from "../../cli-errors.js";
import { agentClient, linkSenderClient } from "../environment.js";
import { expiresInOption, integerOption, required } from "../options.js";
import { printJson, warn } from "../output.js";
import { withProgressBars } from "../progress.js";
import { readSendState, removeSendState, transferIdOption, writeSendState } from "../send-state.js";

/**
 * `handoff send --identity FILE --to RECIPIENT [--account A] [--message M] [--max-downloads N]
 * [--expires-in 24h] [--plain] [--accept-rotation] PATH...` (decisions 5.5): prints the transfer the
 * API answers. --accept-rotation takes a recipient's changed keys instead of refusing them (pinning).
 * `handoff send --resume TRANSFER_ID --identity FILE` finishes a send that was interrupted (7.2).
 * `handoff send --to-request URL [--sender-name N] [--sender-email E] [--identity FILE] PATH...`
 * answers a request link (decisions 10.5).
 */
export interface SendOptions {
  identity?: string;
  to?: string;
  toRequest?: string;
  senderName?: string;
  senderEmail?: string;
  account?: string;
  message?: string;
  maxDownloads?: string;
  expiresIn?: string;
  plain?: boolean;
  acceptRotation?: boolean;
  resume?: string;
}

/** What --plain costs, said before anything is sent. */
export const PLAIN_WARNING =
  "warning: --plain sends the files unencrypted: the server, and anyone who can read its storage, can read them";

export async function send(values: SendOptions, positionals: string[]): Promise<number> {
  if (values.toRequest !== undefined) return sendToLink(values, positionals);
  const identity = required(values.identity, "--identity FILE");
  if (values.resume !== undefined) return resume(identity, values, positionals);
  const to = required(values.to, "--to RECIPIENT");
  if (positionals.length === 0) throw new UsageError("give at least one PATH to send");
  const maxDownloads = integerOption(values.maxDownloads, "--max-downloads", 1, 1000);
  const expiresIn = expiresInOption(values.expiresIn);
  const client = await agentClient(identity, "cli");
  if (values.plain) warn(PLAIN_WARNING);
  // A presigned send keeps its state beside the identity file from before its first byte (7.2).
  let started: string | null = null;
  const transfer = await withProgressBars(({ onProgress }) =>
    client.send({
      to,
      paths: positionals.map((path) => resolve(path)),
      account: values.account,
      message: values.message,
      maxDownloads,
      expiresIn,
      plain: values.plain,
      acceptRotation: values.acceptRotation,
      onProgress,
      onStarted: async (state) => {
        await writeSendState(identity, state);
        started = state.transfer_id;
      },
    }),
  ).catch((error: unknown) => {
    throw started ? resumable(error, started, identity) : error;
  });
  if (started) await removeSendState(identity, started);
  printJson(transfer);
  return 0;
}

/** A send that failed after its state was kept: the error, and how to finish the send. */
function resumable(error: unknown, transferId: string, identity: string): unknown {
  if (!(error instanceof HandoffError)) return error;
  return new HandoffError(
    error.code,
    `${error.message}; to finish the send: handoff send --resume ${transferId} --identity ${identity}`,
    { cause: error },
  );
}

/** Errors after which the send can never be finished: its state goes with them. */
const FINISHED = new Set(["ALREADY_CONFIRMED", "TRANSFER_EXPIRED"]);

/** `handoff send --resume TRANSFER_ID --identity FILE`: the state file holds the rest of the send. */
async function resume(identity: string, values: SendOptions, positionals: string[]): Promise<number> {
  const transferId = transferIdOption(values.resume as string);
  const others = Object.keys(values).filter((name) => name !== "identity" && name !== "resume");
  if (positionals.length > 0 || others.length > 0)
    throw new UsageError(
      "--resume takes only --identity: the send's state file names its files, recipient and options",
    );
  const state = await readSendState(identity, transferId);
  const client = await agentClient(identity, "cli");
  const transfer = await withProgressBars(({ onProgress }) => client.resumeSend(state, { onProgress })).catch(
    async (error: unknown) => {
      if (error instanceof HandoffError && FINISHED.has(error.code))
        await removeSendState(identity, transferId);
      throw error;
    },
  );
  await removeSendState(identity, transferId);
  printJson(transfer);
  return 0;
}

/** What a link's sender may say beside the files; everything else belongs to a send to an agent. */
const LINK_OPTIONS = new Set(["toRequest", "senderName", "senderEmail", "identity"]);

/**
 * `handoff send --to-request URL PATH...`: the files go encrypted to the agent the link names once
 * the transparency log proves its key (else exit 5, nothing sent); prints `{transfer_id, status}`.
 * The sender's name and address are what the agent is shown, marked unverified.
 */
async function sendToLink(values: SendOptions, positionals: string[]): Promise<number> {
  const link = required(values.toRequest, "--to-request URL");
  const others = Object.keys(values).filter((name) => !LINK_OPTIONS.has(name));
  if (others.length > 0)
    throw new UsageError(
      "--to-request takes only --sender-name, --sender-email and --identity: the link sets the rest",
    );
  if (positionals.length === 0) throw new UsageError("give at least one PATH to send");
  const client = await linkSenderClient(values.identity);
  const sent = await withProgressBars(({ onProgress }) =>
    client.sendToRequest({
      link,
      paths: positionals.map((path) => resolve(path)),
      senderName: values.senderName,
      senderEmail: values.senderEmail,
      onProgress,
    }),
  );
  printJson(sent);
  return 0;
}
