import type { Knex } from "knex";
import { runStatements } from "./statements.js";

/**
 * Decisions 10: request links. `request_links` is the read model of the request_link streams
 * (projections/request-links.ts): the token only as its SHA-256 digest (`token_hash`, looked up
 * by the public by-token endpoints), never in clear. A transfer sent through a link names it
 * (`request_id`) and keeps the e-mail address its sender typed, sealed (`sender_email`, decisions
 * 6.5), beside the name in `sender`.
 */
export async function up(knex: Knex): Promise<void> {
  await runStatements(
    knex,
    `
    create table request_links (
      id uuid primary key,
      account_id uuid not null,
      agent_id uuid not null,
      token_hash text not null unique,
      title text not null,
      message text,
      max_files integer not null,
      max_total_size bigint not null,
      max_uses integer not null,
      uses integer not null default 0,
      ask_sender_name boolean not null,
      ask_sender_email boolean not null,
      expires_at timestamptz not null,
      created_at timestamptz not null,
      revoked_at timestamptz
    );
    create index request_links_account on request_links (account_id, created_at);
    alter table transfers add column request_id uuid;
    alter table transfers add column sender_email text
  `,
  );
}

export async function down(knex: Knex): Promise<void> {
  await runStatements(
    knex,
    `
    alter table transfers drop column sender_email;
    alter table transfers drop column request_id;
    drop table request_links
  `,
  );
}
