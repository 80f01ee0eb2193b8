import type { HumanEvent } from "../../domain/human.js";
import { ERASED } from "../../domain/personal-data.js";
import { idOf } from "../../domain/streams.js";
import { statusAt, type TransferEvent, type TransferRecord } from "../../domain/transfer.js";
import type { Clock } from "../clock.js";
import type { EventStore, RecordedEvent } from "../eventstore/port.js";
import type { Email, Mailer } from "../mail/mailer.js";
import type { PersonalData } from "../privacy/personal-data.js";
import { revealRow } from "../privacy/reveal.js";
import type { HumanTokens } from "../security/human-tokens.js";

export interface PeopleMailDeps {
  mailer: Mailer;
  clock: Clock;
  store: EventStore;
  tokens: HumanTokens;
  /** Addresses and names in events are sealed (decisions 6.5): opened here, just before sending. */
  people: PersonalData;
  publicBaseUrl: string;
}

/** The event's personal fields opened; null when the person has been erased (no mail then). */
async function opened<Data extends object>(
  people: PersonalData,
  data: Data,
  fields: (keyof Data)[],
): Promise<Data | null> {
  const shown = await revealRow(people, data, fields);
  return fields.some((field) => shown[field] === ERASED) ? null : shown;
}

type Created = Extract<TransferEvent, { type: "TransferCreated" }>["data"];

const countOf = (files: unknown[]) => (files.length === 1 ? "a file" : `${files.length} files`);
const messageOf = (record: Pick<Created, "message">) =>
  record.message ? `\nTheir message:\n${record.message}\n` : "";

/** Decisions 4.2: the link of the verify page, signed for this account's open verification. */
function verifyMail(
  deps: PeopleMailDeps,
  accountId: string,
  data: Extract<HumanEvent, { type: "EmailVerificationRequested" }>["data"],
): Email {
  const link = `${deps.publicBaseUrl}/verify?token=${deps.tokens.linkToken("verify", accountId, data.verificationId)}`;
  return {
    to: data.email,
    type: "verify",
    subject: "Confirm your e-mail address for Handoff",
    text: [
      "Confirm your e-mail address to finish creating your Handoff account:",
      link,
      "",
      `The link works once, until ${data.expiresAt}. If you did not sign up, ignore this e-mail.`,
    ].join("\n"),
  };
}

/** The link of the reset page, signed for this account's open reset: single use, one hour. */
function resetMail(
  deps: PeopleMailDeps,
  accountId: string,
  data: Extract<HumanEvent, { type: "PasswordResetRequested" }>["data"],
): Email {
  const link = `${deps.publicBaseUrl}/reset-password?token=${deps.tokens.linkToken("reset", accountId, data.resetId)}`;
  return {
    to: data.email,
    type: "password-reset",
    subject: "Reset your Handoff password",
    text: [
      "Someone asked to reset the login password of your Handoff account. Choose a new one here:",
      link,
      "",
      `The link works once, until ${data.expiresAt}. Setting a new password logs out every session.`,
      "If you did not ask, ignore this e-mail: your password stays as it is.",
    ].join("\n"),
  };
}

/** Spec 4.9: someone without an account is invited to make one. */
function inviteMail(deps: PeopleMailDeps, data: Created): Email {
  const count = countOf(data.files);
  return {
    to: data.recipient,
    type: "invite",
    subject: `${data.sender} sent you ${count} on Handoff`,
    text: [
      `${data.sender} sent you ${count} through Handoff, encrypted and waiting for you.`,
      messageOf(data),
      `Create your account and set a receiving password to get ${data.files.length === 1 ? "it" : "them"}:`,
      `${deps.publicBaseUrl}/signup?email=${encodeURIComponent(data.recipient)}`,
      "",
      `The transfer is kept until ${data.expiresAt}.`,
    ].join("\n"),
  };
}

/** Spec 4.9: a person with an account but no receiving key is asked to set one. */
function nudgeMail(deps: PeopleMailDeps, data: Created): Email {
  const count = countOf(data.files);
  return {
    to: data.recipient,
    type: "nudge",
    subject: `${data.sender} sent you ${count}: set your receiving password`,
    text: [
      `${data.sender} sent you ${count} through Handoff, encrypted and waiting for you.`,
      messageOf(data),
      "Set your receiving password to open it:",
      `${deps.publicBaseUrl}/settings`,
      "",
      `The transfer is kept until ${data.expiresAt}.`,
    ].join("\n"),
  };
}

/** Decisions 4.5: the files can be opened now. */
function filesReadyMail(
  deps: PeopleMailDeps,
  record: Pick<Created, "recipient" | "sender" | "files" | "message" | "expiresAt" | "transferId">,
): Email {
  const count = countOf(record.files);
  return {
    to: record.recipient,
    type: "files-ready",
    subject: `${record.sender} sent you ${count}: ready to download`,
    text: [
      `${record.sender} sent you ${count} through Handoff; ${record.files.length === 1 ? "it is" : "they are"} ready.`,
      messageOf(record),
      `Open your inbox: ${deps.publicBaseUrl}/inbox`,
      "",
      `Available until ${record.expiresAt}.`,
    ].join("\n"),
  };
}

type LinkRequested = Extract<HumanEvent, { type: "EmailVerificationRequested" | "PasswordResetRequested" }>;

/** A link to a person's own address, unless it has expired already or the person is erased. */
async function linkMail<Data extends LinkRequested["data"]>(
  deps: PeopleMailDeps,
  recorded: RecordedEvent,
  now: number,
  write: (deps: PeopleMailDeps, accountId: string, data: Data) => Email,
): Promise<Email | null> {
  const data = await opened(deps.people, recorded.data as Data, ["email"]);
  if (!data || Date.parse(data.expiresAt) <= now) return null;
  return write(deps, idOf(recorded.streamId), data);
}

/** The events an e-mail to people can come from: mailFor answers null for every other. */
export const MAILED_EVENTS: readonly string[] = [
  "EmailVerificationRequested",
  "PasswordResetRequested",
  "TransferCreated",
  "ContentKeyWrapped",
];

/** The e-mail an event calls for, or null. */
async function mailFor(deps: PeopleMailDeps, recorded: RecordedEvent): Promise<Email | null> {
  const at = deps.clock.now();
  const now = at.getTime();
  // A transfer expired by now gets no e-mail.
  const expired = (record: TransferRecord) =>
    statusAt(record.status, record.expiresAt, at.toISOString()) === "expired";
  if (recorded.type === "EmailVerificationRequested") return linkMail(deps, recorded, now, verifyMail);
  if (recorded.type === "PasswordResetRequested") return linkMail(deps, recorded, now, resetMail);
  if (recorded.type === "TransferCreated") {
    const created = recorded.data as unknown as Created;
    if (created.mode !== "agent-to-human" || expired(created)) return null;
    const data = await opened(deps.people, created, ["recipient"]);
    if (!data) return null;
    if (data.pendingReason === "recipient_not_registered") return inviteMail(deps, data);
    if (data.pendingReason === "recipient_has_no_receiving_key") return nudgeMail(deps, data);
    return data.status === "active" ? filesReadyMail(deps, data) : null;
  }
  if (recorded.type === "ContentKeyWrapped") {
    const [created] = await deps.store.readStream(recorded.streamId, 0);
    const stored = created?.data as unknown as TransferRecord | undefined;
    if (!stored || expired(stored)) return null;
    const record = await opened(deps.people, stored, ["recipient"]);
    if (!record) return null;
    return filesReadyMail(deps, record);
  }
  return null;
}

/**
 * Decisions 4.5: every e-mail to people, each once per event, with its X-Service-Email-Type:
 * `verify` after sign-up (and for each new link asked for), `password-reset` for a forgotten password, `invite` (no account) or `nudge` (no receiving key) for a transfer held
 * for someone, `files-ready` when a person's transfer can be opened (at once, or on activation).
 * The invite limit is enforced when the transfer is created.
 */
export function peopleMailer(deps: PeopleMailDeps) {
  return async (recorded: RecordedEvent): Promise<boolean> => {
    const email = await mailFor(deps, recorded);
    if (!email) return false;
    await deps.mailer.send(email);
    return true;
  };
}
