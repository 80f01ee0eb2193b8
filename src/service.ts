import { join } from "node:path";
import type { Knex } from "knex";
import { projections } from "../projections/index.js";
import { FileSystemBlobStore } from "./blobs/filesystem.js";
import { LocalBlobUrls } from "./blobs/local-urls.js";
import type { BlobStore } from "./blobs/port.js";
import { AdjustableClock, type Clock, systemClock } from "./clock.js";
import type { CommandDeps } from "./command-handlers/deps.js";
import type { HumanDeps } from "./command-handlers/humans.js";
import { SnapshotStore } from "./command-handlers/snapshots.js";
import { StreamLock } from "./command-handlers/stream-lock.js";
import type { TransferDeps } from "./command-handlers/transfers/record.js";
import { WatchedEventStore } from "./command-handlers/watched-store.js";
import type { WebhookDeps } from "./command-handlers/webhooks.js";
import type { Config } from "./config.js";
import { embeddedDirectory, migrate, openDatabase } from "./db/database.js";
import { UploadLeases } from "./db/upload-leases.js";
import type { EventStore } from "./eventstore/port.js";
import { PostgresEventStore } from "./eventstore/postgres.js";
import { Housekeeper } from "./housekeeping/housekeeper.js";
import { type Mailer, OutboxMailer, SmtpMailer } from "./mail/mailer.js";
import { meteredBlobStore } from "./observability/metrics.js";
import { PersonalData } from "./privacy/personal-data.js";
import type { RateLimitCounter } from "./rate-limits/counter.js";
import { FallbackCounter } from "./rate-limits/fallback.js";
import { MemoryCounter } from "./rate-limits/memory.js";
import {
  FallbackStreamSlots,
  MemoryStreamSlots,
  type OpenStreamSlots,
  RedisStreamSlots,
} from "./rate-limits/open-streams.js";
import { RedisCounter } from "./rate-limits/redis.js";
import { MAILED_EVENTS, peopleMailer } from "./reactors/people-mail.js";
import { oneByOne, Reactor } from "./reactors/reactor.js";
import { WebhookDispatcher } from "./reactors/webhooks/dispatcher.js";
import { WEBHOOK_REACTOR_EVENTS, webhookMessages } from "./reactors/webhooks/messages.js";
import { ROTATION_EVENTS, webhookRotations } from "./reactors/webhooks/rotations.js";
import { ProjectionEngine } from "./read-models/engine.js";
import { HotLookups } from "./read-models/hot-rows.js";
import { HeldContentKeys } from "./security/at-rest.js";
import { HumanTokens } from "./security/human-tokens.js";
import { loadLogKey, loadServerKey } from "./security/server-key.js";
import { UrlTokens } from "./security/url-tokens.js";
import type { Resolver, WebhookPolicy } from "./security/webhook-addresses.js";
import { WebhookSecrets } from "./security/webhook-secrets.js";
import { TransparencyLog } from "./transparency/log.js";

/** Everything a running Handoff holds, wired from the configuration: the composition root. */
export interface Service {
  config: Config;
  db: Knex;
  store: EventStore;
  blobs: BlobStore;
  /** The signed local URLs standing in for presigned ones; null when blobs live in S3. */
  localBlobUrls: LocalBlobUrls | null;
  /** This service's signed upload links: the tus uploads' (decisions 7.1), with S3 too. */
  uploadLinks: LocalBlobUrls;
  engine: ProjectionEngine;
  housekeeper: Housekeeper;
  mailer: Mailer;
  /** Per-API-key rate-limit counts: in Redis with REDIS_URL (shared by instances), else in memory. */
  rateLimits: RateLimitCounter;
  /** The open event streams per credential: in Redis with REDIS_URL (shared by instances), else in memory. */
  openStreams: OpenStreamSlots;
  clock: Clock;
  /** Present only with TEST_CLOCK=1. */
  testClock: AdjustableClock | null;
  deps: CommandDeps;
  /** The command deps plus the read models and file storage the transfer commands use. */
  transferDeps: TransferDeps;
  /** The command deps plus the server's signatures and the login-failure counts the people commands use. */
  humanDeps: HumanDeps;
  /** Signs and checks session tokens and verification links. */
  tokens: HumanTokens;
  /** The command deps plus the webhooks' secrets and address policy (decisions 8.1). */
  webhookDeps: WebhookDeps;
  /** Sends the webhook messages; `wake` makes it look at the queue at once. */
  webhooks: WebhookDispatcher;
  /** The Merkle tree of every event, its signed checkpoints and proofs (decisions 9). */
  transparency: TransparencyLog;
  close(): Promise<void>;
}

export interface ServiceOptions {
  /** Start the projectors and the housekeeper (the CLI's rebuild runs projections itself). */
  runProjections?: boolean;
  onProjectionError?: (error: unknown) => void;
  /** How webhook host names are resolved (default: the system's resolver); tests stand in for DNS. */
  webhookResolver?: Resolver;
  /** How long one webhook attempt may take (default 10 s, decisions 8.3); tests of time-outs shorten it. */
  webhookAttemptTimeoutMs?: number;
}

/** The system's resolver, every address of a name. */
const systemResolver: Resolver = async (hostname) => {
  const { lookup } = await import("node:dns/promises");
  return lookup(hostname, { all: true, verbatim: true });
};

/** How long the webhook reactor waits for the read models it reads to reach an event. */
const WEBHOOK_READ_MODEL_WAIT_MS = 30_000;
/**
 * The webhook reactor's batches gather appends for this long under load, as the projections'
 * do, not a mail's 100 ms: a message's time from commit to its receiver has a budget of 250 ms at
 * p99 (issue 23), and this wait is spent before it is even queued. Where no agent has a webhook,
 * a batch costs no query (HotLookups.anyLiveWebhook).
 */
const WEBHOOK_READ_INTERVAL_MS = 10;
/**
 * Its pace while the read models show no live webhook anywhere: then a batch makes no message,
 * and reading every 10 ms cost a log read for most one-time transfers under load (issue 21). An
 * event that may give an agent a webhook drops that knowledge (HotLookups), and the next wait is
 * the short one again: a service's first webhook hears of its first transfer up to this much later.
 */
const WEBHOOK_IDLE_READ_INTERVAL_MS = 100;

/**
 * PGlite runs in this thread and no other process can write to it: every append wakes the
 * subscribers directly, and frequent idle polls would only take CPU from requests.
 */
const EMBEDDED_IDLE_POLL_MS = 5000;

/**
 * S3 when S3_BUCKET is set, else files under DATA_DIR/blobs served through signed local URLs. The
 * S3 client (like the KurrentDB one) is loaded only when configured: about 8 MB of heap each that a
 * default server has no use for.
 */
async function openBlobStore(
  config: Config,
  serverKey: Buffer,
  uploadLeases: UploadLeases,
): Promise<{ blobs: BlobStore; localBlobUrls: LocalBlobUrls | null; uploadLinks: LocalBlobUrls }> {
  const uploadLinks = new LocalBlobUrls(new UrlTokens(serverKey), config.publicBaseUrl);
  if (config.s3) {
    const { S3BlobStore } = await import("./blobs/s3.js");
    const { bucket, endpoint, region, forcePathStyle, publicEndpoint, createBucket } = config.s3;
    const blobs = new S3BlobStore({
      bucket,
      ...(endpoint ? { endpoint } : {}),
      ...(region ? { region } : {}),
      ...(publicEndpoint ? { publicEndpoint } : {}),
      forcePathStyle,
      uploadLinks,
      uploadLeases,
    });
    if (createBucket) {
      const refused = await blobs.ensureBucket([new URL(config.publicBaseUrl).origin]);
      if (refused) process.stderr.write(`S3_CREATE_BUCKET: ${refused}\n`);
    }
    return { blobs, localBlobUrls: null, uploadLinks };
  }
  const blobs = new FileSystemBlobStore(join(config.dataDir, "blobs"), uploadLinks, uploadLeases);
  return { blobs, localBlobUrls: uploadLinks, uploadLinks };
}

/**
 * Opens a Handoff from its configuration, step by step: the database and the event log, the
 * clock, the server key and the file store, the projections, the command handlers' dependencies,
 * then the background processes (housekeeping, e-mail, webhooks), started unless told not to.
 */
export async function openService(config: Config, options: ServiceOptions = {}): Promise<Service> {
  const { db, store, snapshots } = await openEventStorage(config);
  const testClock = config.testClock ? new AdjustableClock() : null;
  const clock = testClock ?? systemClock;
  const serverKey = loadServerKey(config.serverKey, config.dataDir);
  const opened = await openBlobStore(config, serverKey, new UploadLeases(db));
  // Every reader and writer of file data goes through the metered store, so /metrics counts its bytes.
  const blobs = meteredBlobStore(opened.blobs);
  const onError = options.onProjectionError ?? ((error) => console.error("projection failed:", error));
  const engine = new ProjectionEngine(projections, store, db, onError);
  const { deps, hot, transferDeps } = commandDependencies({
    db,
    store,
    snapshots,
    clock,
    serverKey,
    blobs,
    engine,
    logInDatabase: !config.eventStoreUrl,
  });
  const tokens = new HumanTokens(serverKey);
  const housekeeper = new Housekeeper(transferDeps, (error) => console.error("housekeeping failed:", error));
  testClock?.onAdvance(() => housekeeper.wake());
  const mailer = openMailer(config);
  const peopleMail = peopleMailReactor({ config, db, deps, mailer, tokens });
  const rateLimits = openRateLimits(config);
  const openStreams = openStreamSlots(config);
  const humanDeps: HumanDeps = { ...transferDeps, tokens, addressCounts: rateLimits };
  const webhookParts = openWebhooks({ config, options, db, deps, engine, hot });
  const { webhooks, webhookDeps } = webhookParts;
  testClock?.onAdvance(() => webhooks.wake());
  const transparency = new TransparencyLog(
    store,
    db,
    config.logOrigin,
    loadLogKey(config.logKey, config.dataDir),
    (error) => console.error("transparency log:", error),
    // Events in PostgreSQL: the hasher works on a thread of its own, off the request thread.
    { hasherThread: config.eventStoreUrl ? null : config.databaseUrl },
  );
  const background = { engine, transparency, housekeeper, peopleMail, ...webhookParts };
  if (options.runProjections ?? true) await startBackground(background);

  return {
    config,
    db,
    store,
    blobs,
    localBlobUrls: opened.localBlobUrls,
    uploadLinks: opened.uploadLinks,
    engine,
    housekeeper,
    mailer,
    rateLimits,
    openStreams,
    clock,
    testClock,
    deps,
    transferDeps,
    humanDeps,
    tokens,
    webhookDeps,
    webhooks,
    transparency,
    async close() {
      await stopBackground(background);
      await rateLimits.close();
      await openStreams.close();
      mailer.close();
      await store.close();
      await blobs.close?.();
      await db.destroy();
    },
  };
}

/**
 * The migrated database, and the event log over it (or over KurrentDB with EVENTSTORE_URL), watched
 * so the snapshots know of appends made by another process.
 */
async function openEventStorage(config: Config) {
  const db = openDatabase(
    config.databaseUrl
      ? { kind: "postgres", url: config.databaseUrl }
      : { kind: "pglite", directory: embeddedDirectory(config.dataDir) },
  );
  await migrate(db);
  const log: EventStore = config.eventStoreUrl
    ? await (await import("./eventstore/kurrent.js")).KurrentEventStore.connect(config.eventStoreUrl)
    : await new PostgresEventStore(
        db,
        config.databaseUrl
          ? { listenUrl: config.databaseUrl }
          : { idlePollMs: EMBEDDED_IDLE_POLL_MS, soleWriter: true },
      ).open();
  const snapshots = new SnapshotStore(db, () => log.foreignAppends());
  return { db, store: new WatchedEventStore(log, snapshots), snapshots };
}

/**
 * What every command handler uses, and the transfer commands' additions: the read models' hot rows
 * (which the engine keeps current), the file store and the held content keys.
 */
function commandDependencies(parts: {
  db: Knex;
  store: EventStore;
  snapshots: SnapshotStore;
  clock: Clock;
  serverKey: Buffer;
  blobs: BlobStore;
  engine: ProjectionEngine;
  /** The event log lives in `db` (not in KurrentDB): see PersonalData's `keysFlushWithLog`. */
  logInDatabase: boolean;
}) {
  const { db, store, snapshots, clock, serverKey, blobs, engine } = parts;
  const deps: CommandDeps = {
    store,
    clock,
    serverKey,
    snapshots,
    people: new PersonalData(db, serverKey, { keysFlushWithLog: parts.logInDatabase }),
    streamLock: new StreamLock(),
  };
  const hot = new HotLookups(db, deps.people);
  engine.follow(hot);
  const transferDeps: TransferDeps = {
    ...deps,
    db,
    hot,
    blobs,
    heldKeys: new HeldContentKeys(db, serverKey),
    readModelsCaughtUp: () => engine.caughtUp(),
  };
  return { deps, hot, transferDeps };
}

/** SMTP with SMTP_URL, else files in DATA_DIR/outbox. */
function openMailer(config: Config): Mailer {
  return config.smtpUrl
    ? new SmtpMailer(config.smtpUrl, config.mailFrom)
    : new OutboxMailer(join(config.dataDir, "outbox"), config.mailFrom);
}

/** The reactor that mails people (invitations, verification and reset links, new transfers). */
function peopleMailReactor(parts: {
  config: Config;
  db: Knex;
  deps: CommandDeps;
  mailer: Mailer;
  tokens: HumanTokens;
}): Reactor {
  const { config, db, deps, mailer, tokens } = parts;
  // The checkpoint keeps its first name, from when invitations were the only e-mail it sent.
  return new Reactor(
    "invitations",
    deps.store,
    db,
    oneByOne(
      peopleMailer({
        mailer,
        clock: deps.clock,
        store: deps.store,
        tokens,
        people: deps.people,
        publicBaseUrl: config.publicBaseUrl,
      }),
    ),
    (error) => console.error("sending an e-mail failed:", error),
    { types: MAILED_EVENTS },
  );
}

/** Redis is optional at run time: a server starts, and keeps answering, while it is away. */
function openRateLimits(config: Config): RateLimitCounter {
  return config.redisUrl
    ? new FallbackCounter(RedisCounter.open(config.redisUrl), (message) => console.warn(message))
    : new MemoryCounter();
}

/** The open-event-stream cap's counts, shared through Redis like the rate limits and falling back alike. */
function openStreamSlots(config: Config): OpenStreamSlots {
  return config.redisUrl
    ? new FallbackStreamSlots(RedisStreamSlots.open(config.redisUrl))
    : new MemoryStreamSlots();
}

/**
 * The webhooks (decisions 8): the dispatcher that delivers queued messages, the reactor that
 * queues a message for each event an agent hears of, the one that makes a rotated secret current,
 * and the webhook commands' dependencies.
 */
function openWebhooks(parts: {
  config: Config;
  options: ServiceOptions;
  db: Knex;
  deps: CommandDeps;
  engine: ProjectionEngine;
  hot: HotLookups;
}) {
  const { config, options, db, deps, engine, hot } = parts;
  const webhookPolicy: WebhookPolicy = {
    allowPrivate: config.webhooksAllowPrivate,
    resolve: options.webhookResolver ?? systemResolver,
  };
  const webhookSecrets = new WebhookSecrets(db, deps.serverKey);
  const webhooks = new WebhookDispatcher({
    db,
    clock: deps.clock,
    commands: deps,
    secrets: webhookSecrets,
    policy: webhookPolicy,
    people: deps.people,
    ...(options.webhookAttemptTimeoutMs ? { attemptTimeoutMs: options.webhookAttemptTimeoutMs } : {}),
    onError: (error) => console.error("webhook delivery failed:", error),
  });
  const webhookDeps: WebhookDeps = {
    ...deps,
    db,
    webhookSecrets,
    webhookPolicy,
    wakeDispatcher: () => webhooks.wake(),
  };
  const webhookReactor = new Reactor(
    "webhooks",
    deps.store,
    db,
    webhookMessages({
      db,
      clock: deps.clock,
      publicBaseUrl: config.publicBaseUrl,
      readModelsAt: async (position) => {
        if (!(await engine.waitFor(position, WEBHOOK_READ_MODEL_WAIT_MS)))
          throw new Error(`the read models did not reach ${position}`);
      },
      anyLiveWebhook: () => hot.anyLiveWebhook(),
      enqueued: () => webhooks.wake(),
    }),
    (error) => console.error("queueing a webhook message failed:", error),
    {
      intervalMs: () => (hot.knownNoLiveWebhook() ? WEBHOOK_IDLE_READ_INTERVAL_MS : WEBHOOK_READ_INTERVAL_MS),
      types: WEBHOOK_REACTOR_EVENTS,
    },
  );
  const rotationsReactor = new Reactor(
    "webhook-rotations",
    deps.store,
    db,
    webhookRotations((...rotation) => webhookSecrets.promote(...rotation)),
    (error) => console.error("making a rotated webhook secret current failed:", error),
    { types: ROTATION_EVENTS },
  );
  return { webhooks, webhookDeps, webhookReactor, rotationsReactor };
}

/** What runs in the background once the service is open. */
interface Background {
  engine: ProjectionEngine;
  transparency: TransparencyLog;
  housekeeper: Housekeeper;
  peopleMail: Reactor;
  webhookReactor: Reactor;
  rotationsReactor: Reactor;
  webhooks: WebhookDispatcher;
}

/** The projections first, so the processes that read the read models find them moving. */
async function startBackground(background: Background): Promise<void> {
  await background.engine.start();
  await background.transparency.start();
  background.housekeeper.start();
  await background.peopleMail.start();
  await background.webhookReactor.start();
  await background.rotationsReactor.start();
  background.webhooks.start();
}

/** The log first, as before; then the deliveries and the reactors before the projections they read. */
async function stopBackground(background: Background): Promise<void> {
  await background.transparency.stop();
  await background.webhooks.stop();
  await background.webhookReactor.stop();
  await background.rotationsReactor.stop();
  await background.peopleMail.stop();
  await background.housekeeper.stop();
  await background.engine.stop();
}
