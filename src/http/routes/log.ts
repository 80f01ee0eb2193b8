import { Readable } from "node:stream";
import { toBase64 } from "@handoff/sdk/crypto";
import type { FastifyPluginAsync } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import * as api from "../../contract/log.js";
import { accountSees, historyOf } from "../../queries/history.js";
import { BeyondCheckpoint, type TransparencyLog } from "../../transparency/log.js";
import { callerAccount } from "../auth.js";
import { notFound, validationError } from "../errors.js";
import type { RouteContext } from "../route-context.js";
import { serve } from "../serve.js";

/** Entries of the account read from its history index per query, while the export streams. */
const EXPORT_PAGE = 500;

/** A proof asked beyond the newest checkpoint is the caller's mistake (decisions 9.3). */
async function proven<T>(prove: () => Promise<T>, field: string): Promise<T> {
  try {
    return await prove();
  } catch (error) {
    if (error instanceof BeyondCheckpoint) throw validationError(error.message, field);
    throw error;
  }
}

/** Decisions 9.2, 9.3 and 9.7: checkpoints, the log key, entries, proofs and the verifiable export. */
export function logRoutes({ service }: RouteContext): FastifyPluginAsync {
  const { db, transparency } = service;

  return async (app) => {
    const routes = app.withTypeProvider<ZodTypeProvider>();

    routes.route({
      ...serve(api.getLogKey),
      handler: async () => ({
        origin: transparency.checkpoints.origin,
        public_key: toBase64(transparency.checkpoints.publicKey),
        vkey: transparency.checkpoints.vkey,
      }),
    });

    routes.route({
      ...serve(api.getLogCheckpoint),
      handler: async (request, reply) => {
        const size = request.query.tree_size;
        const checkpoint =
          size === undefined ? await transparency.newestCheckpoint() : await transparency.checkpointAt(size);
        if (!checkpoint) throw notFound("checkpoint");
        // A kept checkpoint never changes; the newest does.
        reply.header(
          "cache-control",
          size === undefined ? "no-cache" : "public, max-age=31536000, immutable",
        );
        return reply.type("text/plain; charset=utf-8").send(checkpoint.note as never);
      },
    });

    routes.route({
      ...serve(api.getLogEntry),
      handler: async (request) => {
        const caller = callerAccount(request);
        const { position } = request.params;
        if (!(await accountSees(db, caller.accountId, position))) throw notFound("log entry");
        const leaf = await transparency.leafOf(position);
        if (!leaf) throw notFound("log entry");
        return { leaf_index: leaf.leafIndex, entry: leaf.entry };
      },
    });

    routes.route({
      ...serve(api.getInclusionProof),
      handler: async (request) => {
        const { leaf_index, tree_size } = request.query;
        const proof = await proven(() => transparency.inclusion(leaf_index, tree_size), "tree_size");
        return {
          leaf_index,
          tree_size,
          leaf_hash: toBase64(await transparency.leafHash(leaf_index)),
          proof: proof.map(toBase64),
        };
      },
    });

    routes.route({
      ...serve(api.getConsistencyProof),
      handler: async (request) => {
        const { from, to } = request.query;
        const proof = await proven(() => transparency.consistency(from, to), "from");
        return { from, to, proof: proof.map(toBase64) };
      },
    });

    routes.route({
      ...serve(api.getAuditExport),
      handler: async (request, reply) => {
        const caller = callerAccount(request);
        const { from, to } = request.query;
        if (from && to && Date.parse(from) > Date.parse(to))
          throw validationError("from is after to", "from");
        const checkpoint = await transparency.newestCheckpoint();
        const lines = exportLines(transparency, db, caller.accountId, checkpoint, from ?? null, to ?? null);
        return reply.type("application/x-ndjson").send(Readable.from(lines));
      },
    });
  };
}

/** The export's lines: the checkpoint, then each of the account's entries it covers, with its proof. */
async function* exportLines(
  log: TransparencyLog,
  db: RouteContext["service"]["db"],
  accountId: string,
  checkpoint: Awaited<ReturnType<TransparencyLog["newestCheckpoint"]>>,
  from: string | null,
  to: string | null,
): AsyncGenerator<string> {
  yield `${JSON.stringify({ checkpoint: checkpoint?.note ?? null })}\n`;
  if (!checkpoint) return;
  const inclusion = await log.inclusionsIn(checkpoint.size);
  let after: string | null = null;
  for (;;) {
    const rows = await historyOf(db, `account:${accountId}`, { after, from, to, limit: EXPORT_PAGE });
    for (const row of rows) {
      const leaf = await log.leafOf(row.position);
      // Entries the newest checkpoint does not cover yet come in the next export.
      if (!leaf || leaf.leafIndex >= checkpoint.size) return;
      const proof = await inclusion(leaf.leafIndex);
      yield `${JSON.stringify({ leaf_index: leaf.leafIndex, entry: leaf.entry, inclusion: proof.map(toBase64) })}\n`;
    }
    const last = rows.at(-1);
    if (!last || rows.length < EXPORT_PAGE) return;
    after = last.position;
  }
}
