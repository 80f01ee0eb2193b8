import type { Knex } from "knex";

/**
 * The whole of an append in one statement: every stream's expected version checked and moved, its
 * events inserted, and (for a server shared by several processes) the wake-up sent. The same work
 * as separate statements inside BEGIN … COMMIT took seven round trips, and an account's creates
 * take turns on its quota stream, so each round trip was paid once per create in series.
 *
 * `appends` is a JSON array of `{stream_id, expected, events: [{event_id, type, data, metadata}]}`
 * where `expected` is a revision, -1 (no stream yet) or -2 (any). A stream not at its expected
 * revision raises SQLSTATE HV409 with the stream and its actual revision in DETAIL, which rolls
 * back the whole statement. Returns one row per append: its last revision and position parts.
 * `notifier` (the appending instance) is the notification's payload, so it can ignore its own.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create function handoff_append(appends jsonb, notify_channel text, notifier text)
    returns table (last_revision bigint, transaction_text text, last_position bigint)
    language plpgsql as $$
    declare
      item jsonb;
      stream text;
      expected bigint;
      count int;
      moved bigint;
      actual bigint;
    begin
      for item in select value from jsonb_array_elements(appends) loop
        stream := item->>'stream_id';
        expected := (item->>'expected')::bigint;
        count := jsonb_array_length(item->'events');
        if expected = -1 then
          insert into event_streams (stream_id, revision) values (stream, count - 1)
            on conflict do nothing returning revision into moved;
        elsif expected = -2 then
          insert into event_streams (stream_id, revision) values (stream, count - 1)
            on conflict (stream_id) do update set revision = event_streams.revision + count
            returning revision into moved;
        else
          update event_streams set revision = revision + count
            where stream_id = stream and revision = expected returning revision into moved;
        end if;
        if moved is null then
          select revision into actual from event_streams where stream_id = stream;
          raise exception 'wrong expected version' using errcode = 'HV409',
            detail = jsonb_build_object('stream_id', stream, 'expected', expected, 'actual', actual)::text;
        end if;
        return query
          with inserted as (
            insert into events (event_id, stream_id, revision, type, data, metadata)
            select (e.value->>'event_id')::uuid, stream, moved - count + e.ordinality, e.value->>'type',
                   e.value->'data', e.value->'metadata'
              from jsonb_array_elements(item->'events') with ordinality as e
            returning global_position
          )
          select moved, pg_current_xact_id()::text, max(global_position) from inserted;
        moved := null;
      end loop;
      if notify_channel is not null then
        perform pg_notify(notify_channel, notifier);
      end if;
    end
    $$
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw("drop function handoff_append(jsonb, text, text)");
}
