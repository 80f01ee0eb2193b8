import type { TransferEvent } from "../../domain/transfer.js";
import type { Clock } from "../clock.js";
import type { RecordedEvent } from "../eventstore/port.js";
import type { Mailer } from "../mail/mailer.js";
import { ERASED, type PersonalData } from "../privacy/personal-data.js";

/**
 * Spec 4.9: a transfer held for a person without an account sends them an invitation, one per
 * transfer (the invite limit is enforced when the transfer is created).
 */
export function invitationMailer(mailer: Mailer, clock: Clock, people: PersonalData, publicBaseUrl: string) {
  return async (recorded: RecordedEvent): Promise<boolean> => {
    if (recorded.type !== "TransferCreated") return false;
    const created = recorded.data as unknown as Extract<TransferEvent, { type: "TransferCreated" }>["data"];
    if (created.pendingReason !== "recipient_not_registered") return false;
    if (Date.parse(created.expiresAt) <= clock.now().getTime()) return false;
    // The address is sealed (decisions 6.5); a person erased before the mail went out gets none.
    const recipient = await people.revealOne(created.recipient);
    if (recipient === null || recipient === ERASED) return false;
    const data = { ...created, recipient };
    const count = data.files.length === 1 ? "a file" : `${data.files.length} files`;
    await mailer.send({
      to: data.recipient,
      type: "invite",
      subject: `${data.sender} sent you ${count} on Handoff`,
      text: [
        `${data.sender} sent you ${count} through Handoff, encrypted and waiting for you.`,
        data.message ? `\nTheir message:\n${data.message}\n` : "",
        `Create your account and set a receiving password to get ${data.files.length === 1 ? "it" : "them"}:`,
        `${publicBaseUrl}/signup?email=${encodeURIComponent(data.recipient)}`,
        "",
        `The transfer is kept until ${data.expiresAt}.`,
      ].join("\n"),
    });
    return true;
  };
}
