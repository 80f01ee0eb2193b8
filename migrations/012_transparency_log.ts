import type { Knex } from "knex";
import { runStatements } from "./statements.js";

/**
 * Issue 32, decisions 9: the log's Merkle tree as tiles (as Go's sumdb and Tessera keep theirs).
 * A tile of `level` L holds up to 256 hashes of tree level 8·L, the complete subtrees of 2^(8L)
 * leaves from tile·256 on: every other node is hashed from one tile, so a proof is a few indexed
 * reads. The last tile of each level grows until full. Leaf positions are kept 256 to a row, in
 * leaf order, so a position finds its leaf index. The hasher's place (`log_state`) moves in the
 * same transaction as the tiles; signed checkpoints are kept as signed, byte for byte. An agent
 * keeps the position of the event that set its current keys, whose leaf proves them (decisions 9.6).
 */
export async function up(knex: Knex): Promise<void> {
  await runStatements(
    knex,
    `
    create table log_tiles (
      level smallint not null,
      tile bigint not null,
      hashes bytea not null,
      primary key (level, tile)
    );
    create table log_leaf_positions (
      tile bigint primary key,
      first_position text not null,
      positions text not null
    );
    create index log_leaf_positions_first on log_leaf_positions (first_position);
    create table log_state (
      id smallint primary key,
      size bigint not null,
      position text
    );
    insert into log_state (id, size, position) values (1, 0, null);
    create table log_checkpoints (
      tree_size bigint primary key,
      note text not null,
      signed_at timestamptz not null default now()
    );
    alter table agents add column key_position text
  `,
  );
}

export async function down(knex: Knex): Promise<void> {
  await runStatements(
    knex,
    `
    alter table agents drop column key_position;
    drop table log_checkpoints;
    drop table log_state;
    drop table log_leaf_positions;
    drop table log_tiles
  `,
  );
}
