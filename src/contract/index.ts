import { accountOperations } from "./account.js";
import { accountRecoveryOperations } from "./account-recovery.js";
import { adminOperations } from "./admin.js";
import { agentOperations } from "./agents.js";
import { apiKeyOperations } from "./api-keys.js";
import { broadcastOperations } from "./broadcasts.js";
import { connectionOperations } from "./connections.js";
import { directoryOperations } from "./directory.js";
import { healthOperations } from "./health.js";
import { historyOperations } from "./history.js";
import { logOperations } from "./log.js";
import type { OperationSpec } from "./operation.js";
import { peopleOperations } from "./people.js";
import { profileOperations } from "./profile.js";
import { receiptOperations } from "./receipts.js";
import { requestOperations } from "./requests.js";
import { resumableOperations } from "./resumable.js";
import { transferOperations } from "./transfers.js";
import { webhookOperations } from "./webhooks.js";

/**
 * Every operation of the public API, in the order the document lists them. Operations a server
 * only serves with some settings (admin with ADMIN_TOKEN, the clock with TEST_CLOCK, file links
 * with local blobs) are listed too: the document describes the API, not one deployment.
 */
export const OPERATIONS: readonly OperationSpec[] = [
  ...healthOperations,
  ...peopleOperations,
  ...accountOperations,
  ...accountRecoveryOperations,
  ...agentOperations,
  ...webhookOperations,
  ...directoryOperations,
  ...profileOperations,
  ...apiKeyOperations,
  ...connectionOperations,
  ...transferOperations,
  ...requestOperations,
  ...receiptOperations,
  ...resumableOperations,
  ...historyOperations,
  ...logOperations,
  ...broadcastOperations,
  ...adminOperations,
];
