import type { ConnectionEvent } from "../domain/connection.js";
import { categoryProjection } from "./projection.js";

export const connectionsProjection = categoryProjection<ConnectionEvent>({
  name: "connections",
  tables: ["connections"],
  category: "connection",
  async apply(trx, event, pair) {
    switch (event.type) {
      case "ConnectionRequested": {
        const { connectionId, requesterAccountId, inviteeAccountId, requestedAt } = event.data;
        await trx("connections").insert({
          id: connectionId,
          pair,
          requester_account_id: requesterAccountId,
          invitee_account_id: inviteeAccountId,
          status: "pending",
          created_at: requestedAt,
          updated_at: requestedAt,
        });
        return;
      }
      case "ConnectionAccepted":
        await trx("connections")
          .where({ id: event.data.connectionId })
          .update({ status: "active", updated_at: event.data.acceptedAt });
        return;
      case "ConnectionDeclined":
        await trx("connections")
          .where({ id: event.data.connectionId })
          .update({ status: "declined", updated_at: event.data.declinedAt });
        return;
      case "ConnectionRevoked":
        await trx("connections")
          .where({ id: event.data.connectionId })
          .update({ status: "revoked", updated_at: event.data.revokedAt });
        return;
      default:
        return;
    }
  },
});
