import type { Knex } from "knex";
import * as eventStore from "./001_event_store.js";
import * as readModels from "./002_read_models.js";
import * as transfers from "./003_transfers.js";
import * as connections from "./004_connections.js";
import * as broadcasts from "./005_broadcasts.js";
import * as snapshots from "./006_snapshots.js";
import * as humans from "./007_humans.js";
import * as appendFunction from "./008_append_function.js";
import * as history from "./009_history_and_personal_data.js";
import * as webhooks from "./010_webhooks.js";
import * as webhookRotations from "./011_webhook_rotations.js";
import * as transparencyLog from "./012_transparency_log.js";
import * as requestLinks from "./013_request_links.js";
import * as uploadLeases from "./014_upload_leases.js";

interface Migration {
  up(knex: Knex): Promise<void>;
  down(knex: Knex): Promise<void>;
}

/** Every migration in order. Listed here, not discovered on disk, so they work compiled or not. */
const migrations: Record<string, Migration> = {
  "001_event_store": eventStore,
  "002_read_models": readModels,
  "003_transfers": transfers,
  "004_connections": connections,
  "005_broadcasts": broadcasts,
  "006_snapshots": snapshots,
  "007_humans": humans,
  "008_append_function": appendFunction,
  "009_history_and_personal_data": history,
  "010_webhooks": webhooks,
  "011_webhook_rotations": webhookRotations,
  "012_transparency_log": transparencyLog,
  "013_request_links": requestLinks,
  "014_upload_leases": uploadLeases,
};

export const migrationSource: Knex.MigrationSource<string> = {
  getMigrations: async () => Object.keys(migrations),
  getMigrationName: (name) => name,
  getMigration: async (name) => {
    const migration = migrations[name];
    if (!migration) throw new Error(`unknown migration ${name}`);
    return migration;
  },
};
