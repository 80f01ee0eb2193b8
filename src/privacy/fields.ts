/**
 * Where personal data sits in events (decisions 6.5), named once: the fields sealed under a
 * person's data key, and the ones an erasure writes "[erased]" over in read models.
 */
export function personalFields(type: string, data: Record<string, unknown>): string[] {
  switch (type) {
    case "AccountCreated":
      return ["email", "name"];
    case "TransferCreated":
      if (data.mode === "agent-to-human") return ["recipient"];
      if (data.mode === "human-to-agent") return ["sender"];
      return [];
    default:
      return [];
  }
}

/** Field names that hold a secret or key material, wherever they appear in an event. */
const SECRET_NAMES = new Set(["ticket", "atRest", "encryptedKey", "claimCode"]);
const SECRET_PATTERN = /hash|sealed|secret|password|token|wrapped|private/i;

/**
 * An event's data as history shows it (decisions 6.1): every field but secrets (a key, a token, a
 * password hash, a sealed or wrapped key), dropped at any depth.
 */
export function publicData(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(publicData);
  if (typeof value !== "object" || value === null) return value;
  return Object.fromEntries(
    Object.entries(value)
      .filter(([key]) => !SECRET_NAMES.has(key) && !SECRET_PATTERN.test(key))
      .map(([key, inner]) => [key, publicData(inner)]),
  );
}
