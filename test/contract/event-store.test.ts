import { KurrentEventStore } from "../../src/eventstore/kurrent.js";
import { PostgresEventStore } from "../../src/eventstore/postgres.js";
import {
  eventStoreServer,
  eventStoreSkipReason,
  migratedDatabase,
  postgresServer,
  postgresSkipReason,
} from "../support/databases.js";
import { eventStoreContract, type StoreUnderTest } from "./event-store.contract.js";

async function onPostgres(kind: "pglite" | "postgres"): Promise<StoreUnderTest> {
  const database = await migratedDatabase(kind);
  const store = new PostgresEventStore(database.db);
  return {
    store,
    async close() {
      await store.close();
      await database.close();
    },
  };
}

eventStoreContract("event store contract on PGlite", () => onPostgres("pglite"));

eventStoreContract(
  "event store contract on PostgreSQL",
  postgresServer ? () => onPostgres("postgres") : null,
  postgresSkipReason,
);

eventStoreContract(
  "event store contract on KurrentDB",
  eventStoreServer
    ? async () => {
        const store = await KurrentEventStore.connect(eventStoreServer as string);
        return { store, close: () => store.close() };
      }
    : null,
  eventStoreSkipReason,
);
