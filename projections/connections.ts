import type { ConnectionEvent, ConnectionStatus } from "../domain/connection.js";
import { categoryProjection } from "./projection.js";
import type { Changed, Inserted } from "./rows.js";

export interface ConnectionRow {
  id: string;
  pair: string;
  requester_account_id: string;
  invitee_account_id: string;
  status: ConnectionStatus;
  created_at: Date;
  updated_at: Date;
}

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
        } satisfies Inserted<ConnectionRow>);
        return;
      }
      case "ConnectionAccepted":
        await trx("connections")
          .where({ id: event.data.connectionId })
          .update({ status: "active", updated_at: event.data.acceptedAt } satisfies Changed<ConnectionRow>);
        return;
      case "ConnectionDeclined":
        await trx("connections")
          .where({ id: event.data.connectionId })
          .update({ status: "declined", updated_at: event.data.declinedAt } satisfies Changed<ConnectionRow>);
        return;
      case "ConnectionRevoked":
        await trx("connections")
          .where({ id: event.data.connectionId })
          .update({ status: "revoked", updated_at: event.data.revokedAt } satisfies Changed<ConnectionRow>);
        return;
      default:
        return;
    }
  },
});
