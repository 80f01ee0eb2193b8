import fastifySwagger from "@fastify/swagger";
import fastifySwaggerUi from "@fastify/swagger-ui";
import Fastify, { type FastifyInstance } from "fastify";
import { serializerCompiler, validatorCompiler } from "fastify-type-provider-zod";
import { OPERATIONS } from "../contract/index.js";
import { openApiDocument } from "../contract/openapi.js";
import { echoRequestId, requestLogOptions } from "../observability/request-log.js";
import type { Service } from "../service.js";
import { registerAuthentication } from "./auth.js";
import { answerClientError, registerProtocolAnswers } from "./client-errors.js";
import { sendError } from "./errors.js";
import { EventStreams } from "./event-stream.js";
import { Idempotency } from "./idempotency.js";
import { registerJsonGuard } from "./json-guard.js";
import { JSON_BODY_LIMIT, MAX_PARAM_LENGTH, serverTimeouts, TIME_LIMITS, type TimeLimits } from "./limits.js";
import { metricsPlugin } from "./metrics.js";
import { registerRateLimits } from "./rate-limit.js";
import { readYourWrites } from "./read-your-writes.js";
import type { RouteContext } from "./route-context.js";
import { accountRoutes } from "./routes/account.js";
import { adminRoutes } from "./routes/admin.js";
import { agentRoutes } from "./routes/agents.js";
import { apiKeyRoutes } from "./routes/api-keys.js";
import { broadcastRoutes } from "./routes/broadcasts.js";
import { connectionRoutes } from "./routes/connections.js";
import { directoryRoutes } from "./routes/directory.js";
import { fileRoutes } from "./routes/files.js";
import { healthRoutes } from "./routes/health.js";
import { historyRoutes } from "./routes/history.js";
import { humanRoutes } from "./routes/humans.js";
import { logRoutes } from "./routes/log.js";
import { profileRoutes } from "./routes/profile.js";
import { receiptRoutes } from "./routes/receipts.js";
import { requestRoutes } from "./routes/requests.js";
import { resumableRoutes } from "./routes/resumable.js";
import { transferRoutes } from "./routes/transfers.js";
import { webhookRoutes } from "./routes/webhooks.js";
import { registerSlowBodyGuard } from "./slow-bodies.js";
import { defaultWebRoot, notFoundAnswer, objectStoreOrigins, registerWebApp } from "./web-app.js";

export interface AppOptions {
  logger?: boolean;
  /** Shorter time limits for tests; the defaults are TIME_LIMITS. */
  timeLimits?: TimeLimits;
  /** The built web app; default dist/web. */
  webRoot?: string;
  /** How often an event stream sends its keep-alive comment; default 15 s (tests shorten it). */
  keepAliveMs?: number;
  /** Tests: runs before any hook or route is added (the check of every answer against the document). */
  instrument?: (app: FastifyInstance) => void;
}

export async function buildApp(service: Service, options: AppOptions = {}): Promise<FastifyInstance> {
  const timeLimits = options.timeLimits ?? TIME_LIMITS;
  const app = Fastify({
    ...requestLogOptions(options.logger ?? false),
    bodyLimit: JSON_BODY_LIMIT,
    ...serverTimeouts(timeLimits),
    // Node's own refusals (malformed HTTP, 431, a slow head) answer in the one error body too.
    clientErrorHandler: answerClientError,
    // Clients send ids and slugs, never our internals: keep the router strict and case-sensitive.
    // Signed upload and download links carry their capability in the path: allow for it.
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: MAX_PARAM_LENGTH },
    // Errors the router raises before any route (a malformed URL) get the one error body too.
    frameworkErrors: (error, request, reply) => sendError(error, request, reply),
  });
  options.instrument?.(app);
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  // JSON endpoints take JSON only: anything else is 415, not a string body that fails validation later.
  app.removeContentTypeParser("text/plain");
  app.setErrorHandler(sendError);
  registerProtocolAnswers(app);
  const webApp = {
    root: options.webRoot ?? defaultWebRoot(),
    connectOrigins: objectStoreOrigins(service.config.s3),
  };
  app.setNotFoundHandler(notFoundAnswer(webApp));

  app.addHook("onRoute", (route) => {
    // The documentation pages are public; this hook must exist before swagger-ui adds them.
    if (route.url.startsWith("/docs")) route.config = { ...(route.config ?? {}), auth: "none" };
  });
  // The document is written from the contract, not gathered from the routes: one source for both.
  await app.register(fastifySwagger, {
    mode: "static",
    specification: { document: openApiDocument(OPERATIONS, service.config.publicBaseUrl) as never },
  });
  await app.register(fastifySwaggerUi, { routePrefix: "/docs", uiConfig: { docExpansion: "list" } });

  echoRequestId(app);
  await app.register(metricsPlugin, {
    token: service.config.metricsToken,
    projectionLag: () => service.engine.lag(),
  });
  registerAuthentication(app, {
    db: service.db,
    hot: service.transferDeps.hot,
    adminToken: service.config.adminToken,
    tokens: service.tokens,
    clock: service.clock,
  });
  registerRateLimits(app, service.rateLimits, service.clock);
  registerJsonGuard(app);
  registerSlowBodyGuard(app, timeLimits);
  const idempotency = new Idempotency(service.db, service.clock, service.deps.serverKey);
  idempotency.register(app);

  const { settle } = readYourWrites(app, service);
  const eventStreams = new EventStreams(options.keepAliveMs, service.openStreams);
  // Streams never end by themselves: end them as the server closes, or they hold its shutdown.
  app.addHook("preClose", async () => eventStreams.closeAll());
  const context: RouteContext = { service, idempotency, settle, eventStreams };
  await app.register(healthRoutes(context));
  await app.register(agentRoutes(context));
  await app.register(webhookRoutes(context));
  await app.register(humanRoutes(context));
  await app.register(apiKeyRoutes(context));
  await app.register(accountRoutes(context));
  await app.register(connectionRoutes(context));
  await app.register(directoryRoutes(context));
  await app.register(profileRoutes(context));
  await app.register(broadcastRoutes(context));
  await app.register(transferRoutes(context));
  await app.register(requestRoutes(context));
  await app.register(historyRoutes(context));
  await app.register(logRoutes(context));
  await app.register(receiptRoutes(context));
  if (service.localBlobUrls) await app.register(fileRoutes(context, service.localBlobUrls));
  await app.register(resumableRoutes(context, service.uploadLinks));
  if (service.config.adminToken) await app.register(adminRoutes(context));
  await registerWebApp(app, webApp);
  return app;
}
