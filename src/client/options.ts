import { parseShieldLevel, type ShieldLevel } from "@handoff/sdk";
import { UsageError } from "../cli-errors.js";
import { EXPIRES_IN_SECONDS, type ExpiresIn } from "../contract/transfers.js";

export function required<T>(value: T | undefined, flag: string): T {
  if (value === undefined || value === "") throw new UsageError(`${flag} is required`);
  return value;
}

/** A whole number within `min`–`max`, or undefined when the flag was not given. */
export function integerOption(text: string | undefined, flag: string, min: number, max: number) {
  if (text === undefined) return undefined;
  const value = Number(text);
  if (!/^\d+$/.test(text) || value < min || value > max)
    throw new UsageError(`${flag} must be a whole number from ${min} to ${max}`);
  return value;
}

/** One of the contract's lifetimes (`24h`, `7d`, …), refused before anything is sent; undefined when not given. */
export function expiresInOption(text: string | undefined): ExpiresIn | undefined {
  if (text === undefined) return undefined;
  if (!Object.hasOwn(EXPIRES_IN_SECONDS, text))
    throw new UsageError(`--expires-in must be one of ${Object.keys(EXPIRES_IN_SECONDS).join(", ")}`);
  return text as ExpiresIn;
}

/** Decisions 5.6: an unknown level is refused before anything is downloaded. */
export function shieldOption(text: string | undefined): ShieldLevel | undefined {
  if (text === undefined) return undefined;
  try {
    return parseShieldLevel(text);
  } catch (error) {
    throw new UsageError(`--shield: ${error instanceof Error ? error.message : String(error)}`);
  }
}

const SIZE_UNITS: Record<string, number> = {
  "": 1,
  b: 1,
  kb: 1e3,
  mb: 1e6,
  gb: 1e9,
  kib: 2 ** 10,
  mib: 2 ** 20,
  gib: 2 ** 30,
};

/** A size in bytes, or with a unit (`50MiB`, `2GB`); undefined when the flag was not given. */
export function sizeOption(text: string | undefined, flag: string): number | undefined {
  if (text === undefined) return undefined;
  const match = /^(\d+)\s*([a-z]*)$/i.exec(text.trim());
  const unit = SIZE_UNITS[match?.[2]?.toLowerCase() ?? "?"];
  const bytes = match && unit ? Number(match[1]) * unit : 0;
  if (!Number.isSafeInteger(bytes) || bytes < 1)
    throw new UsageError(`${flag} must be a size in bytes, or with a unit: KB, MB, GB, KiB, MiB, GiB`);
  return bytes;
}
