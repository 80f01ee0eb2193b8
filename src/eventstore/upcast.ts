/**
 * Events are never rewritten, so readers meet every shape an event type ever had. Each change of
 * shape is lifted here, once, on the way out of the store (both adapters), so that deciders,
 * projections and history see only the current shape.
 */
export function upcastData(type: string, data: Record<string, unknown>): Record<string, unknown> {
  switch (type) {
    // Before decisions 6.5 the address and name were written in clear, with no person behind them.
    case "AccountCreated":
      return { personId: null, ...data };
    // Likewise the e-mail address of an agent-to-human transfer's recipient.
    case "TransferCreated":
      return { recipientPersonId: null, senderPersonId: null, ...data };
    default:
      return data;
  }
}
