import { z } from "zod";

const port = z.coerce.number().int().min(0).max(65535);
const flag = z.enum(["1", "0", "true", "false"]).transform((v) => v === "1" || v === "true");
const url = (protocols: string[]) =>
  z.string().refine(
    (value) => {
      try {
        return protocols.includes(new URL(value).protocol);
      } catch {
        return false;
      }
    },
    `must be a ${protocols.join(" or ")} URL`,
  );
const serverKey = z
  .string()
  .transform((value) => Buffer.from(value, "base64"))
  .refine((key) => key.length === 32, "must be base64 of exactly 32 bytes");

/** Decisions section 1: configuration is environment variables only, checked before anything starts. */
const schema = z.object({
  PORT: port.default(8080),
  HOST: z.string().min(1).default("127.0.0.1"),
  PUBLIC_BASE_URL: url(["http:", "https:"]).optional(),
  DATA_DIR: z.string().min(1).default("./data"),
  DATABASE_URL: url(["postgres:", "postgresql:"]).optional(),
  EVENTSTORE_URL: url([
    "kurrentdb:",
    "kurrentdb+discover:",
    "esdb:",
    "esdb+discover:",
    "kdb:",
    "kdb+discover:",
  ]).optional(),
  S3_BUCKET: z.string().min(1).optional(),
  S3_ENDPOINT: url(["http:", "https:"]).optional(),
  S3_REGION: z.string().min(1).optional(),
  S3_FORCE_PATH_STYLE: flag.optional(),
  S3_PUBLIC_ENDPOINT: url(["http:", "https:"]).optional(),
  S3_CREATE_BUCKET: flag.optional(),
  SMTP_URL: url(["smtp:", "smtps:"]).optional(),
  MAIL_FROM: z.string().min(3).optional(),
  REDIS_URL: url(["redis:", "rediss:"]).optional(),
  SERVER_KEY: serverKey.optional(),
  LOG_KEY: serverKey.optional(),
  LOG_ORIGIN: z
    .string()
    .regex(/^[^\s+]+$/, "must have no spaces and no '+' (a signed note's key name)")
    .optional(),
  ADMIN_TOKEN: z.string().min(16, "must be at least 16 characters").optional(),
  METRICS_TOKEN: z.string().min(16, "must be at least 16 characters").optional(),
  MIN_FREE_DISK_MB: z.coerce.number().min(0).default(100),
  TEST_CLOCK: flag.optional(),
  WEBHOOKS_ALLOW_PRIVATE: flag.optional(),
});

export interface Config {
  port: number;
  host: string;
  publicBaseUrl: string;
  dataDir: string;
  databaseUrl: string | null;
  eventStoreUrl: string | null;
  redisUrl: string | null;
  /** SMTP server URL, or null for the outbox folder. */
  smtpUrl: string | null;
  mailFrom: string;
  s3: {
    bucket: string;
    endpoint: string | null;
    region: string | null;
    forcePathStyle: boolean;
    /** The endpoint presigned URLs name, for clients that reach S3 elsewhere than this server does. */
    publicEndpoint: string | null;
    /** Create the bucket and its CORS rule on start when missing (a bundled MinIO; not for AWS). */
    createBucket: boolean;
  } | null;
  serverKey: Buffer | null;
  /** The transparency log's Ed25519 seed (decisions 9.2); null: generated once into DATA_DIR. */
  logKey: Buffer | null;
  /** The name the log signs its checkpoints under: LOG_ORIGIN, default PUBLIC_BASE_URL's host + "/handoff". */
  logOrigin: string;
  adminToken: string | null;
  /** Bearer token GET /metrics requires; null leaves it open (docs/deployment.md). */
  metricsToken: string | null;
  /** /readyz answers 503 when the disk the blobs are written to has less than this many bytes free. */
  minFreeDiskBytes: number;
  testClock: boolean;
  /** Decisions 8.1: webhooks may use http:// and reach private, loopback and link-local addresses. */
  webhooksAllowPrivate: boolean;
}

export class ConfigError extends Error {}

/** Reads the environment; an empty variable counts as unset. Throws one line naming the variable. */
export function loadConfig(env: NodeJS.ProcessEnv): Config {
  const present = Object.fromEntries(
    Object.entries(env).filter(([, value]) => value !== undefined && value !== ""),
  );
  const parsed = schema.safeParse(present);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const variable = issue?.path.join(".") ?? "environment";
    throw new ConfigError(`invalid configuration: ${variable} ${issue?.message ?? "is invalid"}`);
  }
  const c = parsed.data;
  const publicBaseUrl = (c.PUBLIC_BASE_URL ?? `http://${c.HOST}:${c.PORT}`).replace(/\/+$/, "");
  return {
    port: c.PORT,
    host: c.HOST,
    publicBaseUrl,
    dataDir: c.DATA_DIR,
    databaseUrl: c.DATABASE_URL ?? null,
    eventStoreUrl: c.EVENTSTORE_URL ?? null,
    redisUrl: c.REDIS_URL ?? null,
    smtpUrl: c.SMTP_URL ?? null,
    mailFrom: c.MAIL_FROM ?? "Handoff <no-reply@handoff.invalid>",
    s3: c.S3_BUCKET
      ? {
          bucket: c.S3_BUCKET,
          endpoint: c.S3_ENDPOINT ?? null,
          region: c.S3_REGION ?? null,
          forcePathStyle: c.S3_FORCE_PATH_STYLE ?? false,
          publicEndpoint: c.S3_PUBLIC_ENDPOINT ?? null,
          createBucket: c.S3_CREATE_BUCKET ?? false,
        }
      : null,
    serverKey: c.SERVER_KEY ?? null,
    logKey: c.LOG_KEY ?? null,
    logOrigin: c.LOG_ORIGIN ?? `${new URL(publicBaseUrl).host}/handoff`,
    adminToken: c.ADMIN_TOKEN ?? null,
    metricsToken: c.METRICS_TOKEN ?? null,
    minFreeDiskBytes: Math.round(c.MIN_FREE_DISK_MB * 1024 * 1024),
    testClock: c.TEST_CLOCK ?? false,
    webhooksAllowPrivate: c.WEBHOOKS_ALLOW_PRIVATE ?? false,
  };
}
