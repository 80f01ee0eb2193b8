import type { FastifyPluginAsync } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import type { RouteContext } from "../route-context.js";

/**
 * `GET /v1/mail-delivery`: whether e-mail to people leaves through SMTP or stays in the server's
 * outbox folder (no SMTP_URL), so the web app's "Check your e-mail" can say where the link went.
 * Says nothing about where the folder is.
 */
export function mailDeliveryRoutes({ service }: RouteContext): FastifyPluginAsync {
  const delivery = service.config.smtpUrl ? ("smtp" as const) : ("outbox" as const);
  return async (app) => {
    app.withTypeProvider<ZodTypeProvider>().get(
      "/v1/mail-delivery",
      {
        config: { auth: "none" },
        schema: {
          tags: ["people"],
          summary:
            "How e-mail to people is delivered: smtp, or outbox (kept on the server, no SMTP configured)",
          response: { 200: z.object({ delivery: z.enum(["smtp", "outbox"]) }) },
        },
      },
      async () => ({ delivery }),
    );
  };
}
