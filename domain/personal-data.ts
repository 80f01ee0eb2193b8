/**
 * Personal data in events (decisions 6.5): the fields that name a person, by event type. Erasure
 * by crypto-shredding encrypts exactly these; a new event with such a field is listed here.
 */
export const PERSONAL_DATA_FIELDS: Readonly<Record<string, readonly string[]>> = {
  AccountCreated: ["email", "name"],
  EmailVerificationRequested: ["email"],
  PasswordResetRequested: ["email"],
  TransferCreated: ["recipient", "sender", "senderEmail"],
};

/** What an erased person's data reads as, everywhere (decisions 6.5). */
export const ERASED = "[erased]";

/**
 * The fields of one event that name a person (decisions 6.5), from the list
 * above: a transfer's sender and recipient name a person only on the human side
 * of its mode (agent-to-human: the recipient; human-to-agent: the sender; request: the sender's
 * name and e-mail address as they typed them); the others are agents.
 */
export function personalFields(type: string, data: Record<string, unknown>): string[] {
  const fields = PERSONAL_DATA_FIELDS[type] ?? [];
  if (type !== "TransferCreated") return [...fields];
  const human =
    data.mode === "agent-to-human"
      ? ["recipient"]
      : data.mode === "human-to-agent"
        ? ["sender"]
        : data.mode === "request"
          ? ["sender", "senderEmail"]
          : [];
  return fields.filter((field) => human.includes(field));
}

/** Field names that hold a secret or key material, wherever they appear in an event. */
const SECRET_NAMES = new Set(["ticket", "atRest", "encryptedKey", "claimCode"]);
const SECRET_PATTERN = /hash|sealed|secret|password|token|wrapped|private/i;

/** Field names already tested against SECRET_NAMES and SECRET_PATTERN (the same few recur in every event). */
const secretByName = new Map<string, boolean>();
/** Bound on secretByName: names set by clients (a transfer's metadata) are tested each time beyond it. */
const REMEMBERED_NAMES = 1000;

function isSecret(name: string): boolean {
  const known = secretByName.get(name);
  if (known !== undefined) return known;
  const secret = SECRET_NAMES.has(name) || SECRET_PATTERN.test(name);
  if (secretByName.size < REMEMBERED_NAMES) secretByName.set(name, secret);
  return secret;
}

/**
 * Events' data as history shows it (decisions 6.1), as JSON: every field but secrets (a key, a
 * token, a password hash, a sealed or wrapped key), dropped at any depth. Left out as the JSON is
 * written rather than from a copy made first: a rebuild writes millions of entries.
 */
export function publicJson(value: unknown): string {
  return JSON.stringify(value, (name: string, inner: unknown) => (isSecret(name) ? undefined : inner));
}
