import { z } from "zod";

/**
 * Gives a schema its component name in the OpenAPI document (`#/components/schemas/<id>`), with a
 * description and an example. Name the schemas a client developer would name: bodies and objects.
 */
export function named<Schema extends z.ZodType>(
  id: string,
  schema: Schema,
  meta: { description: string; example?: unknown },
): Schema {
  return schema.meta({
    id,
    description: meta.description,
    ...(meta.example === undefined ? {} : { examples: [meta.example] }),
  });
}

/** Decisions 3.22: the input limits every route shares. */
export const slugSchema = z
  .string()
  .min(1)
  .max(64)
  .regex(/^[A-Za-z0-9._-]+$/, "only letters, digits, hyphen, underscore and dot");
export const nameSchema = z.string().max(200);
export const longTextSchema = z.string().max(4000);
export const metadataSchema = z
  .record(z.string(), z.unknown())
  .refine((value) => Buffer.byteLength(JSON.stringify(value)) <= 16 * 1024, "metadata is over 16 KB as JSON")
  .describe("Free-form JSON object, at most 16 KB as JSON");
export const webhookUrlSchema = z.url().max(2048);

/** An instant the service gives out: ISO 8601 in UTC. */
export const timestamp = z.string().meta({ format: "date-time", description: "ISO 8601 time (UTC)" });
/** A count of bytes: files and storage go past 2^31. */
export const byteCount = z.number().int().min(0).meta({ format: "int64" });
/** A whole number of things (downloads, agents, events). */
export const count = z.number().int().min(0);

/** `{ <key>: Item[] }`: the items of a list or a page under their plural name. */
type Items<Key extends string, Item extends z.ZodType> = { [K in Key]: z.ZodArray<Item> };

/** Named answers of items under a key, followed by `more` (where a page lies). */
function itemsWith<More extends z.ZodRawShape>(more: More) {
  return <Key extends string, Item extends z.ZodType>(
    id: string,
    key: Key,
    item: Item,
    description: string,
  ) => named(id, z.object({ ...({ [key]: z.array(item) } as Items<Key, Item>), ...more }), { description });
}

/** A whole list: `{ <key>: Item[] }`. */
export const list = itemsWith({});
/** A page by offset (decisions 3.10): the items, the total and where the page lies in it. */
export const offsetPage = itemsWith({ total: count, limit: count, offset: count, has_more: z.boolean() });
/** A page by cursor: the items and the cursor of the next page. */
export const cursorPage = itemsWith({
  next_cursor: z.string().nullable().describe("Pass as `cursor` for the next page"),
  has_more: z.boolean(),
});

export const ErrorDetail = named("ErrorDetail", z.object({ path: z.string(), message: z.string() }), {
  description:
    "One thing wrong with the request: where (`body.files.0.size`, `headers.idempotency-key`) and what",
});

export const ErrorBody = named(
  "ErrorBody",
  z.object({
    error: z.object({
      code: z
        .string()
        .describe("Stable machine-readable code, e.g. VALIDATION_ERROR, NOT_FOUND, RATE_LIMITED"),
      message: z.string().describe("One sentence for a person"),
      status: z.number().int().describe("The HTTP status, repeated"),
      details: z.array(ErrorDetail).optional(),
      candidates: z
        .array(z.object({ account_id: z.string(), account_name: z.string(), email_masked: z.string() }))
        .optional()
        .describe("With AMBIGUOUS_RECIPIENT: the accounts the recipient could be"),
    }),
  }),
  {
    description: "The one error body of every failure (decisions 3.1)",
    example: {
      error: {
        code: "VALIDATION_ERROR",
        message: "agent_id: only letters, digits, hyphen, underscore and dot",
        status: 400,
        details: [{ path: "agent_id", message: "only letters, digits, hyphen, underscore and dot" }],
      },
    },
  },
);
export type ErrorBody = z.infer<typeof ErrorBody>;

/** `:id` path parameters: ids are opaque strings to clients. */
export const IdParams = z.object({ id: z.string().describe("The resource's id") });
