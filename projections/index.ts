import { accountsProjection } from "./accounts.js";
import { agentsProjection } from "./agents.js";
import { apiKeysProjection } from "./api-keys.js";
import { broadcastsProjection } from "./broadcasts.js";
import { connectionsProjection } from "./connections.js";
import { historyProjection } from "./history.js";
import { humansProjection, sessionsProjection } from "./humans.js";
import type { Projection } from "./projection.js";
import { requestLinksProjection } from "./request-links.js";
import { transfersProjection } from "./transfers.js";

export const projections: Projection[] = [
  accountsProjection,
  agentsProjection,
  apiKeysProjection,
  broadcastsProjection,
  connectionsProjection,
  humansProjection,
  sessionsProjection,
  transfersProjection,
  requestLinksProjection,
  historyProjection,
];
