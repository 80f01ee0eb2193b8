import { SDK_VERSION } from "@handoff/sdk";
import { expect, it } from "vitest";
import pkg from "../package.json" with { type: "json" };

it("reports the version of its package", () => {
  expect(SDK_VERSION).toBe(pkg.version);
});
