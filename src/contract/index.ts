import { accountOperations } from "./account.js";
import { agentOperations } from "./agents.js";
import { healthOperations } from "./health.js";
import type { OperationSpec } from "./operation.js";

/** Every operation of the public API, in the order the document lists them. */
export const OPERATIONS: readonly OperationSpec[] = [
  ...healthOperations,
  ...agentOperations,
  ...accountOperations,
];
