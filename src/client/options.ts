import { parseShieldLevel, type ShieldLevel } from "@handoff/sdk";
import { UsageError } from "../cli-errors.js";

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

/** Decisions 5.6: an unknown level is refused before anything is downloaded. */
export function shieldOption(text: string | undefined): ShieldLevel | undefined {
  if (text === undefined) return undefined;
  try {
    return parseShieldLevel(text);
  } catch (error) {
    throw new UsageError(`--shield: ${error instanceof Error ? error.message : String(error)}`);
  }
}
