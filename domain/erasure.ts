/**
 * An erasure (decisions 6.5), one stream each: who was erased (the person whose data key was
 * destroyed, when there was one) and what it touched, so that read models redact the same rows
 * on every rebuild. No personal data: the address itself is never recorded.
 */
export type ErasureEvent = {
  type: "PersonErased";
  data: {
    erasureId: string;
    /** Whose data key was destroyed; null when the person had only data written in clear before sealing. */
    personId: string | null;
    /** The erased account, when the person had one. */
    erasedAccountId: string | null;
    /** Every account whose records showed the person's data (the erased one and its correspondents). */
    accountIds: string[];
    /** Transfers that named the person (as the human recipient or sender). */
    transferIds: string[];
    at: string;
  };
};
