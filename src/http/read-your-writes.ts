import type { FastifyInstance } from "fastify";
import type { Position } from "../eventstore/port.js";
import { READ_YOUR_WRITES_TIMEOUT_MS } from "../read-models/engine.js";
import type { Service } from "../service.js";

declare module "fastify" {
  interface FastifyContextConfig {
    /**
     * False for a route that decides on the log alone (a send, a download): it does not wait for
     * the read models before it runs, and answers from its decided state rather than wait for them
     * after it writes (unless a read that cannot wait, such as a link's by token, must show it).
     */
    readsModels?: boolean;
  }
}

/**
 * Read your writes, on both sides. A write that a read model must show at once (most of them)
 * waits, before it answers, until the read models have applied it (`settle`). The hot writes
 * (a send, a download) answer from their decided state at once instead, and every request that
 * reads the read models waits first until they have applied everything committed before it
 * arrived, on any instance: so a GET after a send shows it wherever it lands, and a send or a
 * download does not wait for the projections.
 */
export function readYourWrites(app: FastifyInstance, service: Service) {
  app.addHook("preHandler", (request, _reply, done) => {
    const config = request.routeOptions.config;
    // The hot routes pass without a promise: this hook is on every request's path.
    if (config?.auth === "none" || config?.readsModels === false) return done();
    service.engine.caughtUp(READ_YOUR_WRITES_TIMEOUT_MS).then(() => done(), done);
  });
  return {
    settle: async (position: Position | null): Promise<void> => {
      await service.engine.waitFor(position, READ_YOUR_WRITES_TIMEOUT_MS);
    },
  };
}
