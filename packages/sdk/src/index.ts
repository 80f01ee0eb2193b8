/** @handoff/sdk: the client side of Handoff. */
export const SDK_VERSION = "0.1.0";

export {
  createFileScan,
  DEFAULT_SHIELD_LEVEL,
  type FileScan,
  parseShieldLevel,
  type ScannedFile,
  SHIELD_LEVELS,
  type ShieldFinding,
  type ShieldLevel,
  ShieldLevelError,
  type ShieldResult,
  shieldVerdict,
} from "./shield/index.js";
