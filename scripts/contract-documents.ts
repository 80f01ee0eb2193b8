import openapiTS, { astToString } from "openapi-typescript";
import { OPERATIONS } from "../src/contract/index.js";
import { openApiDocument } from "../src/contract/openapi.js";

/** The server a local `npm start` answers on, as the committed document names it. */
export const DOCUMENTED_SERVER = "http://127.0.0.1:8080";
export const OPENAPI_FILE = "docs/openapi.json";
export const SDK_TYPES_FILE = "packages/sdk/src/api-types.ts";

/** docs/openapi.json as it must read: the contract's document, for a local server. */
export function openApiText(): string {
  return `${JSON.stringify(openApiDocument(OPERATIONS, DOCUMENTED_SERVER), null, 2)}\n`;
}

/** The SDK's API types as they must read: openapi-typescript's rendering of the document. */
export async function sdkTypesText(): Promise<string> {
  const ast = await openapiTS(JSON.parse(openApiText()));
  return [
    "// Generated from docs/openapi.json by `npm run contract` (openapi-typescript): do not edit.",
    "// The contract lives in src/contract/; a test fails when this file drifts from it.",
    "",
    astToString(ast),
  ].join("\n");
}
