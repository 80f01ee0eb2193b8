import { appendFileSync } from "node:fs";
import { afterAll, afterEach } from "vitest";
import { answersChecked, violations } from "./openapi-check.js";

// A test whose requests got answers the document does not describe fails, with each difference.
afterEach(() => {
  const found = violations.splice(0);
  if (found.length > 0) throw new Error(`answers differ from docs/openapi.json:\n${found.join("\n")}`);
});

// OPENAPI_CHECK_REPORT=file: each test file adds how many answers it checked (for the figures).
afterAll(() => {
  const report = process.env.OPENAPI_CHECK_REPORT;
  if (report && answersChecked > 0) appendFileSync(report, `${answersChecked}\n`);
});
