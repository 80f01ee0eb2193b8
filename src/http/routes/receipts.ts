import type { Receipt } from "@handoff/sdk/transparency";
import type { FastifyPluginAsync } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { recordReceipt } from "../../command-handlers/transfers/receipts.js";
import * as api from "../../contract/receipts.js";
import { historyOf } from "../../queries/history.js";
import { findPartyTransfer } from "../../queries/transfers.js";
import { callerAccount } from "../auth.js";
import { callingAgent } from "../calling-agent.js";
import { notFound } from "../errors.js";
import type { RouteContext } from "../route-context.js";
import { serve } from "../serve.js";

/** How long a receipt's answer waits for the log to give it a leaf (the hasher reads every 200 ms). */
const LEAF_WAIT_MS = 3000;

/** Decisions 9.5: recipient-signed receipts. */
export function receiptRoutes({ service, settle }: RouteContext): FastifyPluginAsync {
  const { db, transferDeps, transparency } = service;

  return async (app) => {
    const routes = app.withTypeProvider<ZodTypeProvider>();

    routes.route({
      ...serve(api.postReceipt),
      handler: async (request, reply) => {
        const caller = callerAccount(request);
        const agent = await callingAgent(db, request, caller.accountId);
        const by = { accountId: caller.accountId, agentId: agent.id };
        const { receipt, signature } = request.body;
        const recorded = await recordReceipt(
          transferDeps,
          by,
          agent.signing_public_key,
          caller,
          request.params.id,
          {
            receipt: receipt as Receipt,
            signature,
          },
        );
        const position = recorded.position;
        if (position === null) throw new Error("a receipt was decided but not recorded");
        await settle(position);
        const leaf = await transparency.waitForLeaf(position, LEAF_WAIT_MS);
        return reply.status(201).send({ position, leaf_index: leaf?.leafIndex ?? null });
      },
    });

    routes.route({
      ...serve(api.listReceipts),
      handler: async (request) => {
        const caller = callerAccount(request);
        const transfer = await findPartyTransfer(db, request.params.id, caller.accountId);
        if (!transfer) throw notFound("transfer");
        const rows = await historyOf(db, `transfer:${transfer.id}`, { types: ["ReceiptRecorded"] });
        return {
          receipts: await Promise.all(
            rows.map(async (row) => {
              const { receipt, signature } = row.data as {
                receipt: Record<string, unknown>;
                signature: string;
              };
              const leaf = await transparency.leafOf(row.position);
              return { receipt, signature, position: row.position, leaf_index: leaf?.leafIndex ?? null };
            }),
          ),
        };
      },
    });
  };
}
