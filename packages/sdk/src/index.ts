/** @handoff/sdk: the client side of Handoff. */
export { HandoffClient, type HandoffClientOptions, type RequestOptions } from "./client.js";
export * from "./crypto/index.js";
export {
  HandoffApiError,
  HandoffCustodyError,
  HandoffError,
  HandoffKeyChangedError,
  HandoffTransferError,
  type PinnedKeys,
} from "./errors.js";
export { type ServerSentEvent, serverSentEvents } from "./event-stream.js";
export { createIdentity, type Identity, loadIdentity, saveIdentity } from "./identity.js";
export type { InboxArrival, InboxEventsOptions } from "./inbox-events.js";
export type { ListenOptions } from "./listen.js";
export { defaultLogPath, LogWitness } from "./log-witness.js";
export { nodeAesGcm } from "./node-aes-gcm.js";
export { defaultPinsPath } from "./pins.js";
export type { ReceiptOutcome, ReceivedFile, ReceiveOptions, ReceiveResult } from "./receive.js";
export { parseRequestLink, type RequestSendOptions } from "./request-send.js";
export { MAX_STALLED_ATTEMPTS, RESUMABLE_FROM } from "./resumable.js";
export {
  PRESIGNED_THRESHOLD,
  type Progress,
  type SendOptions,
  type SendState,
  type SendStateFile,
} from "./send.js";
export { senderLabel, sendingAgent } from "./sender.js";
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
export type * from "./types.js";
export { SDK_VERSION } from "./version.js";
export {
  type VerifyWebhookOptions,
  verifyWebhook,
  type WebhookHeaders,
  type WebhookMessage,
} from "./webhooks.js";
