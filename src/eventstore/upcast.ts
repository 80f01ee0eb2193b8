/**
 * Events are never rewritten, so readers meet every shape an event type ever had. Each change of
 * shape is lifted here, once, on the way out of the store (both adapters), so that deciders,
 * projections and history see only the current shape.
 */
export function upcastData(type: string, data: Record<string, unknown>): Record<string, unknown> {
  switch (type) {
    // Before decisions 6.5 the address and name were written in clear, with no person behind them.
    case "AccountCreated":
      return "personId" in data ? data : { personId: null, ...data };
    // Likewise the e-mail address of an agent-to-human transfer's recipient.
    case "TransferCreated":
      return "recipientPersonId" in data && "senderPersonId" in data
        ? data
        : { recipientPersonId: null, senderPersonId: null, ...data };
    default:
      return data;
  }
}

/**
 * An event's data as readers see it, and as it was stored when the two differ: the log's leaves
 * hash what was stored (decisions 9.1), so a new upcaster never changes a leaf.
 */
export function readData(
  type: string,
  stored: Record<string, unknown>,
): { data: Record<string, unknown>; storedData?: Record<string, unknown> } {
  const data = upcastData(type, stored);
  return data === stored ? { data } : { data, storedData: stored };
}
