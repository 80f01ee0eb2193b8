/** @handoff/sdk: the client side of Handoff. */
export const SDK_VERSION = "0.1.0";

export * from "./crypto/index.js";
