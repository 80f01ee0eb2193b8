/**
 * Run by the global setup in a process of its own: a migrated embedded database in the folder
 * given, for the suites to copy instead of running initdb and every migration each time.
 */
import { migrate, openDatabase } from "../../src/db/database.js";

const [directory] = process.argv.slice(2);
if (!directory) throw new Error("usage: make-pglite-template.ts DIRECTORY");
const db = openDatabase({ kind: "pglite", directory });
await migrate(db);
await db.destroy();
