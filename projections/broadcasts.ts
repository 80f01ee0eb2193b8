import type { BroadcastEvent, BroadcastSeverity } from "../domain/broadcast.js";
import { categoryProjection } from "./projection.js";
import type { Changed, Inserted } from "./rows.js";

export interface BroadcastRow {
  id: string;
  title: string;
  content: string;
  severity: BroadcastSeverity;
  affected_components: string[];
  agent_count: number;
  created_at: Date;
  created_position: string;
}

export interface BroadcastDeliveryRow {
  broadcast_id: string;
  agent_id: string;
  read_at: Date | null;
}

/** Rows per insert: three parameters a row stays far below PostgreSQL's 65,535 per statement. */
const DELIVERY_CHUNK = 1000;

/**
 * One row per broadcast and one per delivery. A broadcast reaches exactly the agents recorded in
 * its event (the snapshot taken at publish time); reading it stamps that agent's delivery only.
 */
export const broadcastsProjection = categoryProjection<BroadcastEvent>({
  name: "broadcasts",
  tables: ["broadcasts", "broadcast_deliveries"],
  category: "broadcast",
  async apply(trx, event, id, recorded) {
    switch (event.type) {
      case "BroadcastPublished": {
        const d = event.data;
        await trx("broadcasts").insert({
          id,
          title: d.title,
          content: d.content,
          severity: d.severity,
          affected_components: JSON.stringify(d.affectedComponents),
          agent_count: d.agentIds.length,
          created_at: d.publishedAt,
          created_position: recorded.position,
        } satisfies Inserted<BroadcastRow>);
        for (let start = 0; start < d.agentIds.length; start += DELIVERY_CHUNK) {
          const chunk = d.agentIds.slice(start, start + DELIVERY_CHUNK);
          await trx("broadcast_deliveries").insert(
            chunk.map(
              (agentId) =>
                ({
                  broadcast_id: id,
                  agent_id: agentId,
                  read_at: null,
                }) satisfies Inserted<BroadcastDeliveryRow>,
            ),
          );
        }
        return;
      }
      case "BroadcastRead":
        await trx("broadcast_deliveries")
          .where({ broadcast_id: id, agent_id: event.data.agentId })
          .whereNull("read_at")
          .update({ read_at: event.data.readAt } satisfies Changed<BroadcastDeliveryRow>);
        return;
      default:
        return;
    }
  },
});
