import type { FastifyPluginAsync } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { getHealth, getReadiness } from "../../contract/health.js";
import { dependencyFailure } from "../dependency-failure.js";
import type { RouteContext } from "../route-context.js";
import { serve } from "../serve.js";

async function answers(check: () => Promise<unknown>): Promise<boolean> {
  try {
    await check();
    return true;
  } catch {
    return false;
  }
}

export function healthRoutes({ service }: RouteContext): FastifyPluginAsync {
  return async (app) => {
    const routes = app.withTypeProvider<ZodTypeProvider>();

    routes.route({ ...serve(getHealth), handler: async () => ({ status: "ok" as const }) });

    routes.route({
      ...serve(getReadiness),
      handler: async (_request, reply) => {
        // Decisions 9.4: a log whose past was rewritten is not ready, whatever else answers.
        const log = service.transparency.state;
        if (log.state === "tampered") {
          return reply.status(503).send({
            error: {
              code: "LOG_TAMPERED",
              message: `the transparency log does not match the stored events: ${log.problem}`,
              status: 503,
            },
          });
        }
        const missing: { path: string; message: string }[] = [];
        if (!(await answers(() => service.db.raw("select 1")))) {
          missing.push({ path: "database", message: "does not answer" });
        }
        const blobProblem = await blobStoreProblem(service);
        if (blobProblem) missing.push({ path: "blob_store", message: blobProblem });
        let head: string | null = null;
        if (!(await answers(async () => (head = await service.store.headPosition())))) {
          missing.push({ path: "event_store", message: "does not answer" });
        }
        for (const name of service.engine.behind(head)) {
          missing.push({ path: `projections.${name}`, message: "is catching up" });
        }
        if (missing.length === 0) {
          const rateLimits = service.rateLimits.degraded?.() ?? null;
          return rateLimits
            ? { status: "ready" as const, degraded: [{ path: "rate_limits", message: rateLimits }] }
            : { status: "ready" as const };
        }
        return reply.status(503).send({
          error: {
            code: "NOT_READY",
            message: `not ready: ${missing.map((m) => `${m.path} ${m.message}`).join(", ")}`,
            status: 503,
            details: missing,
          },
        });
      },
    });
  };
}

const MiB = 1024 * 1024;

/** Why the blob store cannot take uploads: it does not answer, or its disk is under the floor (MIN_FREE_DISK_MB). */
async function blobStoreProblem({ blobs, config }: RouteContext["service"]): Promise<string | null> {
  try {
    await blobs.ping();
  } catch (error) {
    return dependencyFailure(error)?.kind === "full"
      ? "is full: no space left on its disk"
      : "does not answer";
  }
  const free = await blobs.freeBytes?.().catch(() => null);
  if (free === undefined || free === null || free >= config.minFreeDiskBytes) return null;
  return `has ${(free / MiB).toFixed(1)} MiB free, under the floor of ${(config.minFreeDiskBytes / MiB).toFixed(1)} MiB (MIN_FREE_DISK_MB)`;
}
