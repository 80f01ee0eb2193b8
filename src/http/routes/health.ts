import type { FastifyPluginAsync } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { getHealth, getReadiness } from "../../contract/health.js";
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
        const missing: { path: string; message: string }[] = [];
        if (!(await answers(() => service.db.raw("select 1")))) {
          missing.push({ path: "database", message: "does not answer" });
        }
        if (!(await answers(() => service.blobs.ping()))) {
          missing.push({ path: "blob_store", message: "does not answer" });
        }
        let head: string | null = null;
        if (!(await answers(async () => (head = await service.store.headPosition())))) {
          missing.push({ path: "event_store", message: "does not answer" });
        }
        for (const name of service.engine.behind(head)) {
          missing.push({ path: `projections.${name}`, message: "is catching up" });
        }
        if (missing.length === 0) return { status: "ready" as const };
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
