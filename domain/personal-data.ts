/**
 * Personal data in events (decisions 6.5): the fields that name a person, by event type. Erasure
 * by crypto-shredding encrypts exactly these; a new event with such a field is listed here.
 */
export const PERSONAL_DATA_FIELDS: Readonly<Record<string, readonly string[]>> = {
  AccountCreated: ["email", "name"],
  EmailVerificationRequested: ["email"],
  PasswordResetRequested: ["email"],
  TransferCreated: ["recipient", "sender"],
};
