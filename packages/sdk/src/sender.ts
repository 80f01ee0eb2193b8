import type { Transfer } from "./types.js";

/**
 * The agent that sent a transfer (its slug), or null when a person sent it: by e-mail
 * (human-to-agent), or through a request link (decisions 10.3), whose sender is what they typed.
 */
export function sendingAgent(transfer: Pick<Transfer, "mode" | "sender">): string | null {
  if (transfer.mode === "human-to-agent" || typeof transfer.sender !== "string") return null;
  return transfer.sender;
}

/**
 * Who sent a transfer, in words: a slug or an address, or for a request link the name and
 * address the sender typed, marked as unverified (the service never checks them).
 */
export function senderLabel(transfer: Pick<Transfer, "sender">): string {
  const { sender } = transfer;
  if (typeof sender === "string") return sender;
  const typed = [sender.name, sender.email ? `<${sender.email}>` : null].filter(Boolean).join(" ");
  return `${typed || "someone"} (request link, unverified)`;
}
