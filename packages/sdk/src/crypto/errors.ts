/** Why the crypto core refused something; stable codes that callers and tests can match on. */
export type HandoffCryptoErrorCode =
  | "BAD_MAGIC"
  | "BAD_RECORD_SIZE"
  | "SALT_MISMATCH"
  | "BAD_TAG"
  | "TRUNCATED"
  | "TRAILING_DATA"
  | "BAD_KEY"
  | "ZERO_SHARED_SECRET"
  | "BAD_ENCODING";

export class HandoffCryptoError extends Error {
  override readonly name = "HandoffCryptoError";

  constructor(
    readonly code: HandoffCryptoErrorCode,
    message: string,
  ) {
    super(message);
  }
}
