import type { FastifyContextConfig } from "fastify";
import type { z } from "zod";
import type { ErrorBody } from "../contract/common.js";
import type { OperationSpec } from "../contract/operation.js";
import { answersOf } from "../contract/standard-answers.js";

/**
 * The JSON body schema of an answer; any body for an answer that is not JSON (a file, CSV); no
 * body (`send()`) for an answer without content.
 */
type JsonOf<A> = A extends z.ZodType
  ? A
  : A extends { json: infer Json extends z.ZodType }
    ? Json
    : A extends { raw: object }
      ? z.ZodUnknown
      : z.ZodVoid;
type JsonResponses<Responses> = {
  [Status in keyof Responses as JsonOf<Responses[Status]> extends never ? never : Status]: JsonOf<
    Responses[Status]
  >;
};
type Part<Spec, Key extends keyof OperationSpec, As extends string> =
  Spec extends Record<Key, infer Schema> ? Record<As, Schema> : unknown;

/** The error statuses a handler may answer itself, with the one error body. */
type ErrorResponses<Spec> = Spec extends { errors: readonly (infer Status extends number)[] }
  ? Record<Status, typeof ErrorBody>
  : unknown;

/** What fastify needs of an operation: its schemas, typed for the handler. */
export type RouteSchema<Spec extends OperationSpec> = Part<Spec, "params", "params"> &
  Part<Spec, "query", "querystring"> &
  Part<Spec, "body", "body"> & { response: JsonResponses<Spec["responses"]> & ErrorResponses<Spec> };

/** Route settings that are the server's business, not the contract's. */
export type RouteExtras = Omit<FastifyContextConfig, "auth" | "idempotency">;

/**
 * The route options of a contract operation: method, URL, the schemas that validate the request and
 * serialize every JSON answer (the error body included), and the authentication it takes.
 *
 *     routes.route({ ...serve(transfers.getTransfer), handler: async (request) => … });
 */
export function serve<const Spec extends OperationSpec>(spec: Spec, extras: RouteExtras = {}) {
  const response = Object.fromEntries(
    [...answersOf(spec)].flatMap(([status, answer]) => (answer.json ? [[status, answer.json]] : [])),
  );
  const schema = {
    ...(spec.params ? { params: spec.params } : {}),
    ...(spec.query ? { querystring: spec.query } : {}),
    ...(spec.body ? { body: spec.body } : {}),
    response,
  };
  const config: FastifyContextConfig = {
    ...extras,
    auth: spec.security,
    ...(spec.idempotency === false ? { idempotency: false as const } : {}),
  };
  return { method: spec.method, url: spec.path, schema: schema as unknown as RouteSchema<Spec>, config };
}
