import type { TransferEvent } from "../../domain/transfer.js";
import type { Clock } from "../clock.js";
import type { RecordedEvent } from "../eventstore/port.js";
import type { Mailer } from "../mail/mailer.js";

/**
 * Spec 4.9: a transfer held for a person without an account sends them an invitation, one per
 * transfer (the invite limit is enforced when the transfer is created).
 */
export function invitationMailer(mailer: Mailer, clock: Clock, publicBaseUrl: string) {
  return async (recorded: RecordedEvent): Promise<boolean> => {
    if (recorded.type !== "TransferCreated") return false;
    const data = recorded.data as unknown as Extract<TransferEvent, { type: "TransferCreated" }>["data"];
    if (data.pendingReason !== "recipient_not_registered") return false;
    if (Date.parse(data.expiresAt) <= clock.now().getTime()) return false;
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
