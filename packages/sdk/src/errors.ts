/**
 * Every error the SDK throws on purpose is a HandoffError with a stable `code`, so callers (the
 * CLI, the MCP server, agents) branch on codes, never on messages. Crypto refusals of 5.3 are the
 * crypto core's HandoffCryptoError, which also carries a `code`.
 */
export class HandoffError extends Error {
  constructor(
    readonly code: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = "HandoffError";
  }
}

/**
 * Verifiable custody failed (decisions 9.6): a key the log does not back, a forked log, a log key
 * other than the pinned one. The CLI exits 5 on it, and nothing was encrypted or verified with the
 * keys in question.
 */
export class HandoffCustodyError extends HandoffError {
  constructor(code: "KEY_NOT_IN_LOG" | "LOG_FORKED", message: string, options?: { cause?: unknown }) {
    super(code, message, options);
    this.name = "HandoffCustodyError";
  }
}

/** An answer of the API that is an error: its `{error: {code, message, status}}` body, typed. */
export class HandoffApiError extends HandoffError {
  readonly status: number;
  readonly details?: unknown;
  readonly candidates?: unknown;

  constructor(
    status: number,
    code: string,
    message: string,
    extra: { details?: unknown; candidates?: unknown } = {},
  ) {
    super(code, message);
    this.name = "HandoffApiError";
    this.status = status;
    if (extra.details !== undefined) this.details = extra.details;
    if (extra.candidates !== undefined) this.candidates = extra.candidates;
  }
}

/** A known agent answered with keys other than the pinned ones (code KEY_CHANGED). */
export class HandoffKeyChangedError extends HandoffError {
  constructor(
    readonly agentId: string,
    readonly pinned: PinnedKeys,
    readonly current: PinnedKeys,
  ) {
    super(
      "KEY_CHANGED",
      `the keys of agent '${agentId}' changed since they were pinned (key_version ${pinned.key_version} → ${current.key_version}); accept the rotation only if you trust it`,
    );
    this.name = "HandoffKeyChangedError";
  }
}

/** The keys remembered for one agent. */
export interface PinnedKeys {
  public_key: string;
  signing_public_key: string | null;
  key_version: number;
}

/**
 * A received transfer that fails decisions 5.3/5.4 or is unsafe to write (codes SIGNATURE_INVALID,
 * SIGNATURE_MISSING, FILE_LIST_MISMATCH, UNSAFE_FILE_NAME, NOT_ENCRYPTED_FOR_AGENT, …).
 */
export class HandoffTransferError extends HandoffError {
  constructor(
    code: string,
    message: string,
    readonly transferId: string,
    options?: { cause?: unknown },
  ) {
    super(code, message, options);
    this.name = "HandoffTransferError";
  }
}
